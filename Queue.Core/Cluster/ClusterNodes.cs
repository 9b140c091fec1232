using Dapper;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Hosting;
using Queue.Core.Sql;

namespace Queue.Core.Cluster;

/// <summary>
/// This Api process's heartbeat in <c>cluster_nodes</c>, and how many Api processes are live (itself included), which
/// is what each process divides a tenant's rate limit by. The count is read with the heartbeat, so it costs nothing on
/// a request path. See docs/DESIGN.md "Scaling out".
/// </summary>
public sealed partial class ClusterNodes(IServiceProvider services, IOptions<ClusterOptions> options, ILogger<ClusterNodes> logger) : BackgroundService
{
    public const string ApiKind = "api";

    private int live = 1;

    /// <summary>This process's id: host, pid and a random part (a restarted process is a new node).</summary>
    public string NodeId { get; } = $"{Environment.MachineName}:{Environment.ProcessId}:{Guid.NewGuid().ToString("N")[..8]}";

    /// <summary>Live Api processes, at least 1 (this one), as of the last heartbeat.</summary>
    public int LiveApiNodes => Volatile.Read(ref live);

    public override async Task StartAsync(CancellationToken cancellationToken)
    {
        await BeatAsync(cancellationToken);
        await base.StartAsync(cancellationToken);
    }

    protected override Task ExecuteAsync(CancellationToken stoppingToken) =>
        PeriodicLoop.RunAsync(TimeSpan.FromSeconds(options.Value.HeartbeatSeconds), BeatAsync, ex => LogFailed(logger, ex), stoppingToken);

    public override async Task StopAsync(CancellationToken cancellationToken)
    {
        await base.StopAsync(cancellationToken);
        try
        {
            await using var conn = await Db.OpenConnectionAsync(cancellationToken);
            await conn.ExecuteAsync(new CommandDefinition(ClusterSql.Leave, new { Node = NodeId }, cancellationToken: cancellationToken));
        }
        catch (ObjectDisposedException)
        {
            // A host disposed before it was stopped (a test host torn down) has no container left to say goodbye with;
            // the node stops counting after NodeTimeoutSeconds, as after a crash.
        }
        catch (Exception ex) when (ex is MySqlException or InvalidOperationException or OperationCanceledException)
        {
            // Leaving is a courtesy: a node that cannot say goodbye stops counting after NodeTimeoutSeconds anyway.
            LogFailed(logger, ex);
        }
    }

    private MySqlDataSource Db => services.GetRequiredService<MySqlDataSource>();

    private async Task BeatAsync(CancellationToken ct)
    {
        try
        {
            await using var conn = await Db.OpenConnectionAsync(ct);
            var count = await conn.ExecuteScalarAsync<int>(new CommandDefinition(ClusterSql.HeartbeatAndCount,
                new { Node = NodeId, Kind = ApiKind, Seconds = options.Value.NodeTimeoutSeconds }, cancellationToken: ct));
            Volatile.Write(ref live, Math.Max(1, count));
            if (Random.Shared.Next(100) == 0)
            {
                await conn.ExecuteAsync(new CommandDefinition(ClusterSql.ForgetGone, new { Kind = ApiKind }, cancellationToken: ct));
            }
        }
        catch (MySqlException ex)
        {
            // The database is down: keep the last count, so the limits stay as they were rather than jump.
            LogFailed(logger, ex);
        }
    }

    [LoggerMessage(EventId = 9002, Level = LogLevel.Warning, Message = "The cluster heartbeat failed; the last count of live Api processes stays in use")]
    private static partial void LogFailed(ILogger logger, Exception exception);
}
