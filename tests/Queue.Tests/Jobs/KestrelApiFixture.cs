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

    /// <summary>This fixture's own spool directory, so a test can watch a large upload arrive there.</summary>
    public string SpoolDirectory { get; } = Path.Combine(Path.GetTempPath(), "queue-spool-" + Guid.NewGuid().ToString("N")[..12]);

    public override async Task InitializeAsync()
    {
        await base.InitializeAsync();
        Port = PrivateMariaDb.FreePort();
        Api = new ApiFactory(ConnectionString, new Dictionary<string, string?> { ["Jobs:SpoolDirectory"] = SpoolDirectory });
        Api.UseKestrel(Port);
        Api.StartServer();
    }

    public override async Task DisposeAsync()
    {
        await Api.DisposeAsync();
        await base.DisposeAsync();
        if (Directory.Exists(SpoolDirectory))
        {
            Directory.Delete(SpoolDirectory, recursive: true);
        }
    }
}
