using Dapper;
using Queue.Core.Claims;
using Queue.Core.Sql;
using Queue.Tests.Infrastructure;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Work;

/// <summary>
/// The claim epoch is read over a connection held for it (docs/DESIGN.md "Claim-ahead that keeps the policy"): a read
/// must still see every bump committed before it began, and a held connection the server dropped must cost no read.
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
    public async Task A_held_connection_the_server_killed_is_replaced_and_the_read_still_answers()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var epochs = new ClaimEpoch(db.DataSource);
        var before = await epochs.ReadAsync();

        Assert.NotEqual(0, await ServerSessions.KillAllAsync(db.DataSource));
        await BumpAsync(db);

        Assert.Equal(before + 1, await epochs.ReadAsync());
    }

    /// <summary>A cancel's or an override's bump of the epoch, committed on a pooled connection of its own.</summary>
    private static async Task BumpAsync(FreshDatabase db)
    {
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync(ClaimSql.BumpEpoch);
    }
}
