using Dapper;
using Queue.Core.Claims;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

/// <summary>
/// A claim's cost does not grow with the depth of the lane it takes from (docs/DESIGN.md "Lane hints at depth"): its
/// closing asks whether the lane still has a claimable item, and must not read the whole lane to answer.
/// </summary>
public sealed class DeepLaneClaimTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    private const int Depth = 20_000;

    [Fact]
    public async Task A_claim_from_a_lane_of_twenty_thousand_items_reads_only_the_head_of_the_lane()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.OneItemJobAsync(key, "deep-lane");
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            // The lane's other items share the job's one document: the claim reads items, not documents, per item.
            await conn.ExecuteAsync($"""
                INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
                SELECT i.job_id, i.document_id, i.task, 0, i.due_at, i.created_at, i.updated_at
                FROM items i JOIN seq_1_to_{Depth} s WHERE i.job_id = @job;
                UPDATE jobs SET items_total = items_total + {Depth} WHERE id = @job
                """, new { job });
        }
        // One connection that keeps its session: the handler counters before and after are the claim's own reads.
        await using var db = OneSession.Pool(fx.ConnectionString);
        var engine = new ClaimEngine(db, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var slot = new ClaimSlot("w", DateTime.UtcNow.AddMinutes(5), false);

        var before = await OneSession.IndexReadsAsync(db);
        var claimed = await engine.ClaimAsync([new ClaimOrder(["text"], [slot])], default);
        var reads = await OneSession.IndexReadsAsync(db) - before;

        Assert.Equal(job, Assert.Single(claimed[0]).JobId);
        // Reading the lane whole to find its next due time costs at least one read per item (20,000).
        Assert.True(reads < 1_000, $"the claim read {reads} index entries from a lane of {Depth + 1} items");
    }
}
