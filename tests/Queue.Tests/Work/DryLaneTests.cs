using System.Diagnostics;
using System.Net;
using Dapper;
using Queue.Core.Claims;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Tests.Work;

/// <summary>The lanes of a job its completion ran dry go after the commit (LaneJanitor), never holding the completion up.</summary>
public sealed class DryLaneTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_completion_answers_at_once_while_another_transaction_holds_the_lane_of_its_job()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 1, ["held-lane"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "held-lane" } });

        // What a rewrite does to every lane for the length of its transaction.
        await using var holder = await fx.DataSource.OpenConnectionAsync();
        await using var tx = await holder.BeginReadCommittedAsync(default);
        await holder.ExecuteAsync("SELECT * FROM ordering WHERE job_id = @Job FOR UPDATE", new { Job = job }, tx);
        var watch = Stopwatch.StartNew();
        using var r = await WorkFixture.FinishAsync(http, item, "complete");
        watch.Stop();

        Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        Assert.True(watch.Elapsed < TimeSpan.FromSeconds(1), $"the completion took {watch.Elapsed.TotalMilliseconds:F0} ms behind a held lane");
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT state FROM jobs WHERE id = @Id", new { Id = job }));
        await tx.RollbackAsync();
    }

    [Fact]
    public async Task The_lanes_of_a_job_its_completion_ran_dry_are_removed_after_the_commit()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 1, ["dry-lane", "dry-lane-2"]);
        using var http = fx.Worker();
        foreach (var task in new[] { "dry-lane", "dry-lane-2" })
        {
            var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { task } });
            using var r = await WorkFixture.FinishAsync(http, item, "complete");
            Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        }

        await fx.Service<LaneJanitor>().DrainAsync(default);
        Assert.Equal(0L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = job }));
    }

    [Fact]
    public async Task The_lanes_of_more_dry_jobs_than_one_statement_reads_are_all_removed_in_one_pass()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var i = 0; i < SqlRows.InListValues + 40; i++)
        {
            jobs.Add(await fx.NewJobAsync(tenant.Id, 1, ["dry-many"]));
        }
        // Their items done, as the completions that reported them dry left them.
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("UPDATE jobs SET items_done = items_total WHERE id IN @Ids", new { Ids = jobs });
        }

        fx.Service<LaneJanitor>().RanDry(jobs);
        await fx.Service<LaneJanitor>().DrainAsync(default);

        Assert.Equal(0L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id IN @Ids", new { Ids = jobs }));
    }

    [Fact]
    public async Task A_job_reported_dry_that_has_work_again_keeps_its_lanes()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        // An active item, as after an upload that came between the completion's commit and the janitor.
        var job = await fx.NewJobAsync(tenant.Id, 1, ["refilled"]);

        fx.Service<LaneJanitor>().RanDry([job]);
        await fx.Service<LaneJanitor>().DrainAsync(default);

        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = job }));
    }
}
