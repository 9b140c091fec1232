using Dapper;
using Queue.Core;
using Queue.Core.Claims;
using Queue.Core.Sql;
using Queue.Tests.Infrastructure;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Work;

/// <summary>
/// The claim epoch is read over a connection held for it, and a handout uses a read sent at most
/// <see cref="EpochLease.Freshness"/> before it (docs/DESIGN.md "Claim-ahead that keeps the policy"): a read must see every
/// bump whose writer has settled, and a held connection the server dropped must cost no read.
/// </summary>
public sealed class ClaimEpochTests
{
    [Fact]
    public async Task A_read_over_the_held_connection_sees_a_bump_committed_after_the_read_before_it()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var epochs = new ClaimEpoch(db.DataSource);
        var before = await epochs.ReadAsync();

        await BumpAsync(db);

        Assert.Equal(before + 1, await epochs.ReadAsync());
    }

    [Fact]
    public async Task Reads_that_keep_coming_inside_the_freshness_window_see_a_bump_once_its_writer_has_settled()
    {
        // A busy filter's handouts answer from the last read while it is fresh, and a read goes out in the background
        // meanwhile: however many callers come, none may answer from a read sent before a bump whose writer settled.
        await using var db = await FreshDatabase.CreateAsync();
        await using var epochs = new ClaimEpoch(db.DataSource);
        var before = await epochs.ReadAsync();
        long after;
        await using (new EpochReadsKeepComing(epochs))
        {
            await BumpAsync(db);
            after = await epochs.ReadAsync();
        }

        Assert.Equal(before + 1, after);
    }

    [Fact]
    public async Task A_held_connection_the_server_killed_is_replaced_and_the_read_still_answers()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var epochs = new ClaimEpoch(db.DataSource);
        var before = await epochs.ReadAsync();

        Assert.NotEqual(0, await ServerSessions.KillAllAsync(db.DataSource));
        await BumpAsync(db);

        Assert.Equal(before + 1, await epochs.ReadAsync());
    }

    /// <summary>A cancel's or an override's bump of the epoch, committed on a pooled connection of its own, and its settle.</summary>
    private static async Task BumpAsync(FreshDatabase db)
    {
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync(ClaimSql.BumpEpoch);
        }
        await EpochLease.SettleAsync(default);
    }
}
