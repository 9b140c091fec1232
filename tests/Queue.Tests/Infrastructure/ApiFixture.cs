using System.Net.Http.Headers;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Mvc.Testing;
using Queue.Api;

namespace Queue.Tests.Infrastructure;

/// <summary>A database plus the Api on it, shared by the tests of one class.</summary>
public class ApiFixture : DatabaseFixture
{
    public ApiFactory Api { get; private set; } = null!;

    protected virtual IDictionary<string, string?> Settings => new Dictionary<string, string?>();

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Api = new ApiFactory(ConnectionString, Settings);
        _ = Api.Server; // start it now, so the first test does not pay for it
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
    }
}
