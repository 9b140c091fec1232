using System.Globalization;
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

    private const string ServiceOverridePrefix = "QUEUE_BENCH_SVC_";

    /// <summary>
    /// The runtime knobs run.sh gives Queue.Api (the runtime reads them only from the environment): a 2 MB gen0 budget,
    /// 1 MB GC regions, no precompiled framework code, and socket completions inline (README "Memory",
    /// scripts/services.sh `start_api`). Every benchmark's Api starts with them, so each measures the Api as run.sh
    /// runs it.
    /// </summary>
    public static Dictionary<string, string> ApiRuntimeSettings() => new()
    {
        ["DOTNET_GCgen0size"] = "0x200000",
        ["DOTNET_GCRegionSize"] = "0x100000",
        ["DOTNET_ReadyToRun"] = "0",
        ["DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS"] = "1",
    };

    public PrivateMariaDb Server { get; }

    public string ConnectionString { get; }

    /// <summary>The private server's process, for its RSS and CPU time.</summary>
    public int ServerPid => int.Parse(File.ReadAllText(Path.Combine(Server.Directory, "mariadbd.pid")).Trim(), CultureInfo.InvariantCulture);

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
        foreach (var (k, v) in (assembly == "Queue.Api" ? ApiRuntimeSettings() : []).Concat(env ?? new Dictionary<string, string>()))
        {
            settings[k] = v;
        }
        // QUEUE_BENCH_SVC_NAME=value sets NAME for the services and wins over the defaults above, so a runtime setting
        // (GC, thread pool) can be compared back to back without a rebuild.
        foreach (var entry in Environment.GetEnvironmentVariables().Cast<System.Collections.DictionaryEntry>())
        {
            if (entry.Key is string key && key.StartsWith(ServiceOverridePrefix, StringComparison.Ordinal))
            {
                settings[key[ServiceOverridePrefix.Length..]] = entry.Value?.ToString() ?? "";
            }
        }
        // QUEUE_BENCH_CONNECTION_EXTRA (for example "Connection Reset=true") is appended to the services' connection
        // string, so a driver setting can be compared back to back without a rebuild.
        var extra = Environment.GetEnvironmentVariable("QUEUE_BENCH_CONNECTION_EXTRA");
        var p = ServiceProcess.Start(assembly, string.IsNullOrEmpty(extra) ? ConnectionString : $"{ConnectionString};{extra}", settings);
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
