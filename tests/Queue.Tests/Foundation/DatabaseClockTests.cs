using Dapper;
using Queue.Core.Cluster;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Foundation;

/// <summary>Lease times come from the database's clock, so Api hosts whose clocks disagree still agree on expiries.</summary>
public sealed class DatabaseClockTests(DatabaseFixture fx) : IClassFixture<DatabaseFixture>
{
    [Theory]
    [InlineData(3 * 3600)]
    [InlineData(-90)]
    public async Task A_host_clock_that_is_off_by_hours_or_seconds_reads_the_database_time_once_synced(int skewSeconds)
    {
        var clock = new DatabaseClock(new SkewedClock(TimeSpan.FromSeconds(skewSeconds)));
        Assert.Equal(TimeSpan.Zero, clock.Offset);

        await clock.SyncAsync(fx.DataSource, default);

        await using var conn = await fx.DataSource.OpenConnectionAsync();
        var database = DateTime.SpecifyKind(await conn.ExecuteScalarAsync<DateTime>("SELECT UTC_TIMESTAMP(6)"), DateTimeKind.Utc);
        var ours = clock.GetUtcNow().UtcDateTime;
        Assert.True(Math.Abs((ours - database).TotalMilliseconds) < 500, $"database {database:O}, clock {ours:O}");
        Assert.True(Math.Abs(clock.Offset.TotalSeconds + skewSeconds) < 1, $"offset {clock.Offset}");
    }

    private sealed class SkewedClock(TimeSpan skew) : TimeProvider
    {
        public override DateTimeOffset GetUtcNow() => System.GetUtcNow() + skew;
    }
}
