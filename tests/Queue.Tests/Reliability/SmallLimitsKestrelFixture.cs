using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using Queue.Tests.Infrastructure;
using Queue.Tests.Jobs;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>The Api with small limits on real Kestrel sockets, where "before the body is read" can be observed.</summary>
public sealed class SmallLimitsKestrelFixture : DatabaseFixture
{
    public ApiFactory Api { get; private set; } = null!;

    public int Port { get; private set; }

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Port = Queue.Local.PrivateMariaDb.FreePort();
        Api = new ApiFactory(ConnectionString, new Dictionary<string, string?>
        {
            ["Limits:MaxDocumentBytes"] = "1024",
            ["Limits:MaxRequestBytes"] = "4096",
        });
        Api.UseKestrel(Port);
        Api.StartServer();
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
    }
}
