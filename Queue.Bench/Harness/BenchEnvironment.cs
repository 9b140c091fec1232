using Microsoft.Extensions.Logging.Abstractions;
using Queue.Core.Data;
using Queue.Local;

namespace Queue.Bench.Harness;

/// <summary>
/// A private MariaDB with the real migrations, plus the real services started as Release processes from this
/// program's output folder. Everything is loopback-only and is torn down when the scenario ends.
/// </summary>
public sealed class BenchEnvironment : IAsyncDisposable
{
    private readonly List<ServiceProcess> services = [];

    private BenchEnvironment(PrivateMariaDb server, string connectionString)
    {
        Server = server;
        ConnectionString = connectionString;
    }

    public PrivateMariaDb Server { get; }

    public string ConnectionString { get; }

    public static async Task<BenchEnvironment> StartAsync(string bufferPool = "6G")
    {
        var server = await PrivateMariaDb.StartEphemeralAsync(bufferPool);
        var cs = await server.CreateDatabaseAsync("bench");
        await Migrations.ApplyAsync(cs, NullLogger.Instance);
        return new BenchEnvironment(server, cs);
    }

    /// <summary>Starts Queue.Api (or another service) and waits until it is ready.</summary>
    public async Task<ServiceProcess> StartServiceAsync(string assembly = "Queue.Api", IDictionary<string, string>? env = null)
    {
        var settings = new Dictionary<string, string>
        {
            ["Logging__LogLevel__Default"] = "Warning",
            ["DOTNET_gcServer"] = "0",
        };
        foreach (var (k, v) in env ?? new Dictionary<string, string>())
        {
            settings[k] = v;
        }
        var p = ServiceProcess.Start(assembly, ConnectionString, settings);
        services.Add(p);
        await p.WaitHealthyAsync(assembly == "Queue.Api" ? "/readyz" : "/healthz");
        return p;
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var s in services)
        {
            await s.DisposeAsync();
        }
        await Server.DisposeAsync();
    }
}
