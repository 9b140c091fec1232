using Dapper;
using Queue.Core.Claims;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Work;

/// <summary>
/// The closing of a claim (docs/DESIGN.md "Claims"): each lane it emptied is hidden until its next item falls due, or
/// removed when it has no active item left, and a lane another transaction holds is passed over, never waited for.
/// </summary>
public sealed class ClaimHintTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_claim_hides_the_lane_it_emptied_removes_a_lane_left_without_work_and_passes_over_a_lane_another_transaction_holds()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var hinted = await fx.OneItemJobAsync(key, "hinted");
        var held = await fx.OneItemJobAsync(key, "held");
        var dry = await fx.OneItemJobAsync(key, "dry");
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            // The dry job's item finished behind its lane's back, so the lane has no active item left.
            await conn.ExecuteAsync("UPDATE items SET state = 2 WHERE job_id = @dry", new { dry });
        }
        var heldBefore = await HintAsync(held);
        await using var holder = await fx.DataSource.OpenConnectionAsync();
        await using var hold = await holder.BeginTransactionAsync();
        await holder.ExecuteAsync("SELECT job_id FROM ordering WHERE job_id = @held FOR UPDATE", new { held }, hold);

        var engine = new ClaimEngine(fx.DataSource, new SeedLaneSelector(), TimeProvider.System, new ClaimCounters());
        var expires = DateTime.UtcNow.AddMinutes(5);
        var slots = Enumerable.Range(0, 3).Select(k => new ClaimSlot($"w{k}", expires, false)).ToList();
        // Waiting for the held lane would take the server's lock wait timeout (5 s) and fail the claim.
        var claimed = await engine.ClaimAsync([new ClaimOrder(["text"], slots)], default).WaitAsync(TimeSpan.FromSeconds(3));

        Assert.Equal([hinted, held], claimed[0].Select(t => t.JobId).Order());
        Assert.True(await HintAsync(hinted) > DateTime.UtcNow.AddMinutes(4), "the emptied lane is hidden until its lease expires");
        Assert.Equal(heldBefore, await HintAsync(held));
        Assert.Null(await HintAsync(dry));
        await hold.RollbackAsync();
    }

    /// <summary>The lane's hint as committed (null: the lane is gone).</summary>
    private async Task<DateTime?> HintAsync(long job)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        return await conn.QuerySingleOrDefaultAsync<DateTime?>("SELECT available_at FROM ordering WHERE job_id = @job", new { job });
    }
}
