using System.Globalization;
using System.Net.Http.Headers;
using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Jobs;
using Queue.Core.Security;
using Queue.Local;

namespace Queue.Tests.Cluster;

/// <summary>
/// Queue as scripts/cluster.sh runs it, on this machine: a MariaDB primary and its GTID replica, three Api processes
/// and two Admin processes on them, and HAProxy in front of the Api processes (round robin, health-checked). The Api
/// processes poll for other work only every 5 s, so a worker woken sooner was woken by the cross-process wake-up.
/// </summary>
public sealed class ClusterFixture : IAsyncLifetime
{
    public const int ApiCount = 3;

    private readonly List<ServiceProcess> apis = [];
    private LocalBalancer? balancer;

    public ReplicatedMariaDb Db { get; private set; } = null!;

    public string Primary { get; private set; } = "";

    public string Replica { get; private set; } = "";

    public MySqlDataSource Source { get; private set; } = null!;

    public IReadOnlyList<ServiceProcess> Apis => apis;

    public IReadOnlyList<ServiceProcess> Admins { get; private set; } = [];

    /// <summary>The balancer: what customers and workers use.</summary>
    public Uri Balancer => balancer!.Url;

    public string WorkerKey { get; private set; } = "";

    private const int NodeTimeoutSeconds = 10;

    /// <summary>
    /// Auth:KeyCacheSeconds of the Api processes: below the production 5 s, so the revocation test waits 2 s for the
    /// caches to let go of a key rather than 5. The tenant rate limit is unaffected: its buckets are keyed by the
    /// limits, not by the cached principal.
    /// </summary>
    public const int KeyCacheSeconds = 2;

    public static Dictionary<string, string> ApiSettings(string replica) => new()
    {
        ["ConnectionStrings__QueueRead"] = replica,
        ["Claims__PollMilliseconds"] = "5000",
        ["Cluster__HeartbeatSeconds"] = "1",
        // The production default. With 3 s, a heartbeat delayed past it on a loaded 2-core box made the other processes
        // count two live nodes for a moment: fresh token buckets with half the rate and burst, so the rate-limit test
        // once measured 34.2/s against 30 (CI, 2026-11-26).
        ["Cluster__NodeTimeoutSeconds"] = NodeTimeoutSeconds.ToString(CultureInfo.InvariantCulture),
        ["Cluster__ReplicaCheckSeconds"] = "1",
        ["Auth__KeyCacheSeconds"] = KeyCacheSeconds.ToString(CultureInfo.InvariantCulture),
        ["Logging__LogLevel__Default"] = "Warning",
    };

    public async Task InitializeAsync()
    {
        Db = await ReplicatedMariaDb.StartEphemeralAsync();
        Primary = await Db.Primary.CreateDatabaseAsync("queue");
        // The replica has the database before a process connects to it: one that found it missing would keep its reads
        // on the primary for seconds.
        await Db.WaitCaughtUpAsync(TimeSpan.FromSeconds(60));
        Replica = Db.Replica.ConnectionStringFor("queue");

        // Started before the migrations, which each process applies at start-up too, as in production, one at a time
        // under the migration lock: the seconds of .NET start-up overlap them.
        for (var i = 0; i < ApiCount; i++)
        {
            apis.Add(ServiceProcess.Start("Queue.Api", Primary, ApiSettings(Replica)));
        }
        Admins = [ServiceProcess.Start("Queue.Admin", Primary, new Dictionary<string, string> { ["ConnectionStrings__QueueRead"] = Replica }),
            ServiceProcess.Start("Queue.Admin", Primary, new Dictionary<string, string> { ["ConnectionStrings__QueueRead"] = Replica })];
        await Migrations.ApplyAsync(Primary, NullLogger.Instance);
        await Db.WaitCaughtUpAsync(TimeSpan.FromSeconds(60));
        Source = new MySqlDataSourceBuilder(QueueDatabase.Normalize(Primary)).Build();
        WorkerKey = (await Keys.IssueAsync(KeyRole.Worker, null, "cluster", default)).Secret;
        foreach (var s in apis.Concat(Admins))
        {
            await s.WaitHealthyAsync();
        }

        balancer = await LocalBalancer.StartAsync(apis.Select(a => a.Url));
    }

    public ApiKeyService Keys => new(Source, TimeProvider.System, Options.Create(new AuthOptions { KeyCacheSeconds = 0 }));

    /// <summary>A tenant of its own (one per test), with its own task, and its customer key.</summary>
    public async Task<(string Task, string Key)> TenantAsync(int rateLimit = 0, int rateBurst = 0)
    {
        var name = "c" + Guid.NewGuid().ToString("N")[..10];
        var task = "t" + name;
        var tenant = await new TenantService(Source, TimeProvider.System).CreateAsync(name, new TenantSettings([task], RateLimit: rateLimit, RateBurst: rateBurst), default);
        return (task, (await Keys.IssueAsync(KeyRole.Customer, tenant.Id, "cluster", default)).Secret);
    }

    public static HttpClient Client(Uri baseAddress, string key)
    {
        var http = new HttpClient { BaseAddress = baseAddress, Timeout = TimeSpan.FromSeconds(60) };
        http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        return http;
    }

    /// <summary>Kills Api process <paramref name="index"/> with SIGKILL.</summary>
    public void KillApi(int index) => apis[index].Kill();

    /// <summary>Starts Api process <paramref name="index"/> again where the balancer expects it.</summary>
    public async Task RestartApiAsync(int index)
    {
        var url = apis[index].Url;
        await apis[index].DisposeAsync();
        apis[index] = ServiceProcess.Start("Queue.Api", Primary, ApiSettings(Replica), url);
        await apis[index].WaitHealthyAsync();
    }

    /// <summary>Waits until every Api process has counted all <see cref="ApiCount"/> live (so each enforces a third of a limit).</summary>
    public async Task WaitAllApisLiveAsync()
    {
        await using var conn = await Source.OpenConnectionAsync();
        DateTime since = default;
        await Eventually.UntilAsync(async () =>
        {
            since = await conn.ExecuteScalarAsync<DateTime>("SELECT UTC_TIMESTAMP(6)");
            // Live as the processes count it: a killed process's row counts until it is NodeTimeoutSeconds old.
            return await conn.ExecuteScalarAsync<int>(
                "SELECT COUNT(*) FROM cluster_nodes WHERE kind = 'api' AND seen_at >= UTC_TIMESTAMP(6) - INTERVAL @Timeout SECOND",
                new { Timeout = NodeTimeoutSeconds }) == ApiCount;
        }, "three live Api processes");
        // Each heartbeat writes, then counts: once every live node has beaten after that moment, each has counted three.
        await Eventually.UntilAsync(async () => await conn.ExecuteScalarAsync<int>(
            "SELECT COUNT(*) FROM cluster_nodes WHERE kind = 'api' AND seen_at > @Since", new { Since = since }) == ApiCount,
            "every Api process beat after all three were live");
    }

    public async Task<long> ScalarAsync(string sql, object? args = null)
    {
        await using var conn = await Source.OpenConnectionAsync();
        return Convert.ToInt64(await conn.ExecuteScalarAsync(sql, args), CultureInfo.InvariantCulture);
    }

    public async Task DisposeAsync()
    {
        if (balancer is not null)
        {
            await balancer.DisposeAsync();
        }
        foreach (var s in apis.Concat(Admins))
        {
            await s.DisposeAsync();
        }
        await Source.DisposeAsync();
        await Db.DisposeAsync();
        // The next class in the RunsAlone collection measures latencies: let the servers' files reach the disk now,
        // not under its measurements.
        using var sync = System.Diagnostics.Process.Start("sync");
        await sync!.WaitForExitAsync();
    }
}
