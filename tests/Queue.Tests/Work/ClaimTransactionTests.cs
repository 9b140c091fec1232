using Dapper;
using MySqlConnector;
using Queue.Core.Claims;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Work;

/// <summary>
/// A claim runs its transaction by hand (docs/DESIGN.md "Claim and completion round trips"): begun with its first
/// locking statement, committed with its last batch, and rolled back by the engine when it fails, so no lock outlives it.
/// </summary>
public sealed class ClaimTransactionTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_claim_that_fails_after_locking_its_item_leaves_the_item_unlocked_and_ready_and_the_connection_usable()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.OneItemJobAsync(key, "claim-fails-midway");
        // No reset when a connection goes back to this pool: a transaction left open would keep its locks there, and
        // the next claim on that connection would run inside it.
        await using var db = OneSession.Pool(fx.ConnectionString);
        var slot = new ClaimSlot("w", DateTime.UtcNow.AddMinutes(5), false);

        var failing = new ClaimEngine(db, new FailsAfterLocking(), TimeProvider.System, new ClaimCounters());
        var ex = await Assert.ThrowsAsync<InvalidOperationException>(() => failing.ClaimAsync([new ClaimOrder(["text"], [slot])], default));
        Assert.Equal(FailsAfterLocking.Message, ex.Message);

        await using (var other = await fx.DataSource.OpenConnectionAsync())
        await using (var tx = await other.BeginTransactionAsync())
        {
            // NOWAIT fails at once on a row another transaction holds.
            var state = await other.QuerySingleAsync<int>("SELECT state FROM items WHERE job_id = @job FOR UPDATE NOWAIT", new { job }, tx);
            Assert.Equal(0, state);
        }
        var claimed = await new ClaimEngine(db, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters())
            .ClaimAsync([new ClaimOrder(["text"], [slot])], default);
        Assert.Equal(job, Assert.Single(claimed[0]).JobId);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job AND state = 1", new { job }));
    }

    /// <summary>The seed order, failing once the claim has locked the lane's item (the engine reports each take).</summary>
    private sealed class FailsAfterLocking : ILaneSelector
    {
        public const string Message = "the selector failed after the claim locked its item";

        private readonly SeedLaneSelector seed = new();

        public Task<IReadOnlyList<Lane>> SelectAsync(MySqlConnection conn, LaneQuery query, CancellationToken ct) => seed.SelectAsync(conn, query, ct);

        public void Claimed(long tenantId, int count) => throw new InvalidOperationException(Message);

        public double? TurnOf(long tenantId) => null;

        public bool TakesTurns => false;
    }
}
