using System.Diagnostics;
using System.Globalization;
using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Security;
using Queue.Local;

namespace Queue.Bench.Soak;

/// <summary>
/// What a soak runs against, and the faults it injects: a private MariaDB in its own directory (restartable on the same
/// port after a SIGKILL) and one Queue.Api process (restartable after a SIGKILL, on a new port). With a
/// <see cref="FaultProxy"/>, the Api reaches MariaDB only through it; the soak's own checks connect directly, so they
/// see the truth.
/// </summary>
public sealed class SoakWorld : IAsyncDisposable
{
    private readonly string dir;
    private readonly int port;
    private readonly Dictionary<string, string> apiSettings;
    private readonly string apiConnectionString;
    private PrivateMariaDb server;
    private ServiceProcess api;

    private SoakWorld(string dir, int port, PrivateMariaDb server, string connectionString, FaultProxy? proxy, string apiConnectionString,
        ServiceProcess api, Dictionary<string, string> apiSettings, string customerKey, string workerKey)
    {
        this.dir = dir;
        this.port = port;
        this.server = server;
        this.api = api;
        this.apiSettings = apiSettings;
        this.apiConnectionString = apiConnectionString;
        Proxy = proxy;
        ConnectionString = connectionString;
        CustomerKey = customerKey;
        WorkerKey = workerKey;
        Url = api.Url;
    }

    /// <summary>Straight to MariaDB, never through the proxy.</summary>
    public string ConnectionString { get; }

    /// <summary>The proxy between the Api and MariaDB, when the soak injects connection faults.</summary>
    public FaultProxy? Proxy { get; }

    public string CustomerKey { get; }

    public string WorkerKey { get; }

    /// <summary>The Api's base URL right now (it changes when the Api is restarted).</summary>
    public string Url { get; private set; }

    public ServiceProcess Api => api;

    public static async Task<SoakWorld> StartAsync(bool proxied = false)
    {
        var dir = Path.Combine(Path.GetTempPath(), "queue-soak-" + Guid.NewGuid().ToString("N")[..12]);
        var port = PrivateMariaDb.FreePort();
        var server = await PrivateMariaDb.StartInDirectoryAsync(dir, port, ["--innodb-buffer-pool-size=512M"]);
        var cs = await server.CreateDatabaseAsync("soak");
        await Migrations.ApplyAsync(cs, NullLogger.Instance);
        string customer, worker;
        await using (var db = new MySqlDataSourceBuilder(QueueDatabase.Normalize(cs)).Build())
        {
            var tenant = await new TenantService(db, TimeProvider.System).CreateAsync("soak", new TenantSettings(["text", "ocr"], MaxAttempts: 3), default);
            var keys = new ApiKeyService(db, TimeProvider.System, Options.Create(new AuthOptions()));
            customer = (await keys.IssueAsync(KeyRole.Customer, tenant.Id, "soak", default)).Secret;
            worker = (await keys.IssueAsync(KeyRole.Worker, null, "soak", default)).Secret;
        }
        var settings = new Dictionary<string, string>
        {
            ["Logging__LogLevel__Default"] = "Warning",
            ["Limits__RequestTimeoutSeconds"] = "5",
            ["Claims__DatabaseWaitMilliseconds"] = "3000",
            ["Jobs__DatabaseWaitMilliseconds"] = "3000",
        };
        FaultProxy? proxy = null;
        var apiCs = cs;
        if (proxied)
        {
            proxy = new FaultProxy();
            proxy.Start(port);
            apiCs = proxy.ConnectionString(cs);
        }
        var api = ServiceProcess.Start("Queue.Api", apiCs, settings);
        await api.WaitHealthyAsync("/readyz");
        return new SoakWorld(dir, port, server, cs, proxy, apiCs, api, settings, customer, worker);
    }

    /// <summary>SIGKILL of the Api, then a new one (a new port): in-flight calls break off, grouped claims are lost.</summary>
    public async Task RestartApiAsync()
    {
        api.Kill();
        await api.DisposeAsync();
        api = ServiceProcess.Start("Queue.Api", apiConnectionString, apiSettings);
        await api.WaitHealthyAsync("/readyz", seconds: 120);
        Url = api.Url;
    }

    /// <summary>SIGKILL of mariadbd, then a restart on the same data directory and port (crash recovery).</summary>
    public async Task RestartDatabaseAsync()
    {
        var pid = int.Parse((await File.ReadAllTextAsync(Path.Combine(dir, "mariadbd.pid"))).Trim(), CultureInfo.InvariantCulture);
        using (var kill = Process.Start("kill", ["-9", pid.ToString(CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync();
        }
        await server.DisposeAsync();
        server = await PrivateMariaDb.StartInDirectoryAsync(dir, port, ["--innodb-buffer-pool-size=512M"]);
    }

    /// <summary>mariadbd's resident memory, connections and row lock waits so far.</summary>
    public async Task<(long RssBytes, long Connections, long LockWaits)> DatabaseStatsAsync()
    {
        try
        {
            var pid = int.Parse((await File.ReadAllTextAsync(Path.Combine(dir, "mariadbd.pid"))).Trim(), CultureInfo.InvariantCulture);
            await using var conn = new MySqlConnection(server.ServerConnectionString);
            await conn.OpenAsync();
            var status = (await conn.QueryAsync<(string Name, string Value)>(
                "SHOW GLOBAL STATUS WHERE Variable_name IN ('Threads_connected', 'Innodb_row_lock_waits')")).ToDictionary(r => r.Name, r => long.Parse(r.Value, CultureInfo.InvariantCulture));
            return (Proc.RssBytes(pid), status["Threads_connected"], status["Innodb_row_lock_waits"]);
        }
        catch (Exception ex) when (ex is MySqlException or IOException or FormatException)
        {
            return (0, 0, 0); // restarting
        }
    }

    public async ValueTask DisposeAsync()
    {
        await api.DisposeAsync();
        if (Proxy is not null)
        {
            await Proxy.DisposeAsync();
        }
        await server.DisposeAsync();
        if (Directory.Exists(dir))
        {
            Directory.Delete(dir, recursive: true);
        }
    }
}

/// <summary>Figures of a process from /proc.</summary>
public static class Proc
{
    public static long RssBytes(int pid) => Field(pid, "VmRSS:") * 1024;

    public static long Threads(int pid) => Field(pid, "Threads:");

    private static long Field(int pid, string name)
    {
        try
        {
            var line = File.ReadLines($"/proc/{pid}/status").FirstOrDefault(l => l.StartsWith(name, StringComparison.Ordinal));
            return line is null ? 0 : long.Parse(line[name.Length..].Trim().Split(' ')[0], CultureInfo.InvariantCulture);
        }
        catch (IOException)
        {
            return 0;
        }
    }
}
