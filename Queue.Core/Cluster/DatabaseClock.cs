using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Cluster;

/// <summary>
/// The database's clock, read through this host's: every process adds the offset it last measured against MariaDB's
/// <c>UTC_TIMESTAMP(6)</c>, so lease expiries, due times and retries written by Api processes on different hosts agree
/// to within a round trip, however far the hosts' own clocks drift apart. Timers and timestamps stay the host's: they
/// pace the process and measure durations, which need no agreement. See docs/DESIGN.md "Scaling out".
/// </summary>
public sealed class DatabaseClock(TimeProvider host) : TimeProvider
{
    private long offsetTicks;
    private int synced;

    /// <summary>Database time minus host time, as last measured (zero until the first measurement).</summary>
    public TimeSpan Offset => TimeSpan.FromTicks(Interlocked.Read(ref offsetTicks));

    /// <summary>Whether the offset was ever measured. Until then lease times would be the host's own.</summary>
    public bool Synced => Volatile.Read(ref synced) == 1;

    /// <summary>
    /// Refuses to make lease times before the first measurement: a host whose clock is off by seconds would hand out
    /// leases that other processes see expire early or late (docs/DESIGN.md "Scaling out"). The caller answers 503.
    /// </summary>
    public void ThrowIfNotSynced()
    {
        if (!Synced)
        {
            throw new Data.ServiceBusyException("this process has not read the database's clock yet");
        }
    }

    public override DateTimeOffset GetUtcNow() => host.GetUtcNow() + Offset;

    public override long GetTimestamp() => host.GetTimestamp();

    public override long TimestampFrequency => host.TimestampFrequency;

    public override TimeZoneInfo LocalTimeZone => host.LocalTimeZone;

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period) =>
        host.CreateTimer(callback, state, dueTime, period);

    /// <summary>
    /// Measures the offset: three reads of the database's clock, keeping the one with the shortest round trip, and
    /// taking the host's time at its midpoint (the error is at most half that round trip).
    /// </summary>
    public async Task SyncAsync(MySqlDataSource db, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        var best = (Rtt: TimeSpan.MaxValue, Offset: TimeSpan.Zero);
        for (var i = 0; i < 3; i++)
        {
            var before = host.GetUtcNow();
            var database = await conn.ExecuteScalarAsync<DateTime>(new CommandDefinition(ClusterSql.Now, cancellationToken: ct));
            var after = host.GetUtcNow();
            var rtt = after - before;
            if (rtt < best.Rtt)
            {
                var midpoint = before + (rtt / 2);
                best = (rtt, new DateTimeOffset(DateTime.SpecifyKind(database, DateTimeKind.Utc)) - midpoint);
            }
        }
        Interlocked.Exchange(ref offsetTicks, best.Offset.Ticks);
        Volatile.Write(ref synced, 1);
    }
}
