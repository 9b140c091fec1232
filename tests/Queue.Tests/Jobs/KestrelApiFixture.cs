using System.Net;
using System.Net.Sockets;
using System.Text;

using Queue.Local;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>The Api on real Kestrel sockets, for what the in-memory test server cannot show: bodies that stall or break off.</summary>
public sealed class KestrelApiFixture : DatabaseFixture
{
    public ApiFactory Api { get; private set; } = null!;

    public int Port { get; private set; }

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Port = PrivateMariaDb.FreePort();
        Api = new ApiFactory(ConnectionString);
        Api.UseKestrel(Port);
        Api.StartServer();
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
    }
}
