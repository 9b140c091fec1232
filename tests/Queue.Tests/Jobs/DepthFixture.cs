using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Work;

namespace Queue.Tests.Jobs;

/// <summary>1,500 one-item jobs of one tenant, created once for the class.</summary>
public sealed class DepthFixture : WorkFixture
{
    public const int Jobs = 1_500;

    public List<long> Ids { get; } = [];

    public string Key { get; private set; } = "";

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        var (tenant, key) = await NewCustomerAsync();
        Key = key;
        // One at a time, so ids (and the ties of equal values) follow creation order.
        for (var i = 0; i < Jobs; i++)
        {
            Ids.Add(await NewJobAsync(tenant.Id, 1, ["depth"]));
        }
    }
}
