using System.Net;
using System.Net.Http.Json;
using Queue.Api.Infrastructure;
using Dapper;
using Queue.Core.Claims;
using Queue.Core.Security;

namespace Queue.Tests.Work;

public sealed class LeaseAndFailureTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task An_expired_lease_is_reclaimed_at_once_with_the_attempt_raised_and_the_expiry_recorded_as_a_failure()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["expiry"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "expiry" }, lease = 10 });
        Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "expiry" } }));
        var expiredBefore = ApiMetrics.LeasesExpired.Value;

        fx.Clock.Advance(TimeSpan.FromSeconds(10.5));
        var again = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "expiry" } });

        var id = first.GetProperty("id").GetInt64();
        Assert.Equal(id, again.GetProperty("id").GetInt64());
        Assert.Equal(1, first.GetProperty("attempt").GetInt32());
        Assert.Equal(2, again.GetProperty("attempt").GetInt32());
        Assert.True(ApiMetrics.LeasesExpired.Value >= expiredBefore + 1);
        Assert.Equal("lease expired", await fx.ScalarAsync<string>("SELECT error FROM item_errors WHERE item_id = @Id AND attempt = 1", new { Id = id }));
        Assert.Equal("lease expired", (await fx.ItemAsync(id)).LastError);
    }

    [Fact]
    public async Task A_lanes_next_claim_starts_past_the_items_claims_took_there_and_a_claim_walks_the_whole_lane_again_after_a_second()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 3, ["floor"]);
        using var http = fx.Worker();
        var first = (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "floor" } })).GetProperty("id").GetInt64();
        // Ready again below the lane's floor without this process hearing of it, as a give-back by another Api process.
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("UPDATE items SET state = 0, lease_token = NULL, lease_expires_at = NULL, worker = NULL, due_at = @Now WHERE id = @Id",
                new { fx.Now, Id = first });
        }

        var second = (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "floor" } })).GetProperty("id").GetInt64();
        fx.Clock.Advance(LaneFloors.Rescan);
        var third = (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "floor" } })).GetProperty("id").GetInt64();

        Assert.True(second > first, "the claim walked the lane from its first item again");
        Assert.Equal(first, third);
    }

    [Fact]
    public async Task An_item_this_process_gives_back_below_the_lanes_floor_is_claimed_again_at_once()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 3, ["floor-back"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "floor-back" } });
        var id = first.GetProperty("id").GetInt64();
        var jobId = await fx.ScalarAsync<long>("SELECT job_id FROM items WHERE id = @Id", new { Id = id });
        var token = Convert.FromHexString(first.GetProperty("leaseToken").GetString()!);
        var lease = new TakenItem(id, jobId, tenant.Id, 0, "floor-back", 1, token, fx.Now.AddMinutes(1), Reservation: false);

        await fx.Service<LeaseService>().ReleaseAsync([lease], default);

        Assert.Equal(id, (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "floor-back" } })).GetProperty("id").GetInt64());
    }

    [Fact]
    public async Task A_claim_that_takes_an_expired_lease_with_fresh_items_records_the_expiry_on_that_item_alone()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 3, ["expiry-mixed"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { worker = "a", tasks = new[] { "expiry-mixed" }, lease = 10 });
        fx.Clock.Advance(TimeSpan.FromSeconds(10.5));

        var items = await WorkFixture.ClaimAsync(http, new { worker = "b", tasks = new[] { "expiry-mixed" }, max = 3, lease = 60 });

        Assert.Equal(3, items.Length);
        Assert.Equal(3, items.Select(i => i.GetProperty("leaseToken").GetString()).Distinct().Count());
        var expiredId = first.GetProperty("id").GetInt64();
        foreach (var i in items)
        {
            var id = i.GetProperty("id").GetInt64();
            var row = await fx.ItemAsync(id);
            Assert.Equal(id == expiredId ? "lease expired" : null, row.LastError);
            Assert.Equal(id == expiredId ? 2 : 1, row.Attempts);
            Assert.Equal("b", await fx.ScalarAsync<string>("SELECT worker FROM items WHERE id = @Id", new { Id = id }));
            Assert.Equal(fx.Clock.GetUtcNow().UtcDateTime.AddSeconds(60), row.DueAt, TimeSpan.FromSeconds(1));
        }
    }

    [Fact]
    public async Task A_hundred_one_item_jobs_claimed_in_one_call_are_all_leased_and_hidden_and_their_completions_close_every_job()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var j = 0; j < 100; j++)
        {
            jobs.Add(await fx.NewJobAsync(tenant.Id, 1, ["hundred"]));
        }
        using var http = fx.Worker();

        // One claim transaction: more leases and lanes than one grouped statement carries.
        var items = await WorkFixture.ClaimAsync(http, new { worker = "h", tasks = new[] { "hundred" }, max = 100 });

        Assert.Equal(100, items.Length);
        Assert.Equal(100, items.Select(i => i.GetProperty("leaseToken").GetString()).Distinct().Count());
        Assert.Equal(100L, await fx.ScalarAsync<long>(
            "SELECT COUNT(*) FROM items WHERE job_id IN @Jobs AND state = 1 AND attempts = 1 AND worker = 'h'", new { Jobs = jobs }));
        Assert.Equal(100L, await fx.ScalarAsync<long>(
            "SELECT COUNT(*) FROM ordering WHERE job_id IN @Jobs AND available_at > @Now", new { Jobs = jobs, fx.Now }));
        Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "hundred" } }));

        var answers = await Task.WhenAll(items.Select(i => WorkFixture.FinishAsync(http, i, "complete")));
        Assert.All(answers, a => Assert.Equal(HttpStatusCode.NoContent, a.StatusCode));
        Assert.Equal(100L, await fx.ScalarAsync<long>(
            "SELECT COUNT(*) FROM jobs WHERE id IN @Jobs AND state = 2 AND items_done = 1 AND finished_at IS NOT NULL", new { Jobs = jobs }));
    }

    [Fact]
    public async Task A_lease_that_expires_on_the_last_allowed_attempt_makes_the_item_dead()
    {
        var (tenant, _) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], MaxAttempts: 2));
        var job = await fx.NewJobAsync(tenant.Id, 1, ["expiry-dead"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "expiry-dead" }, lease = 10 });
        fx.Clock.Advance(TimeSpan.FromSeconds(11));
        Assert.Equal(2, (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "expiry-dead" }, lease = 10 })).GetProperty("attempt").GetInt32());
        fx.Clock.Advance(TimeSpan.FromSeconds(11));

        Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "expiry-dead" } }));
        var row = await fx.ItemAsync(item.GetProperty("id").GetInt64());
        Assert.Equal(3, row.State);
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM item_errors WHERE item_id = @Id", new { Id = row.Id }));
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT state FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(1L, await fx.ScalarAsync<long>("SELECT items_dead FROM jobs WHERE id = @Id", new { Id = job }));
    }

    [Fact]
    public async Task A_failed_item_backs_off_exponentially_then_goes_dead_after_max_attempts_keeping_every_error()
    {
        var (tenant, _) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], MaxAttempts: 3));
        var job = await fx.NewJobAsync(tenant.Id, 1, ["backoff"]);
        using var http = fx.Worker();
        long id = 0;
        for (var attempt = 1; attempt <= 3; attempt++)
        {
            var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "backoff" } });
            id = item.GetProperty("id").GetInt64();
            Assert.Equal(attempt, item.GetProperty("attempt").GetInt32());
            var failedAt = fx.Now;
            var r = await WorkFixture.FinishAsync(http, item, "fail", new { leaseToken = item.GetProperty("leaseToken").GetString(), error = $"boom {attempt}" });
            Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
            if (attempt == 3)
            {
                break;
            }
            // Due after 2^(attempt-1) s with ±20% jitter: not before 80% of it, certainly by 120%.
            var backoff = TimeSpan.FromSeconds(Math.Pow(2, attempt - 1));
            var due = (await fx.ItemAsync(id)).DueAt;
            Assert.InRange(due, failedAt + (backoff * 0.8) - TimeSpan.FromMilliseconds(1), failedAt + (backoff * 1.2) + TimeSpan.FromMilliseconds(1));
            fx.Clock.Advance(backoff * 0.79);
            Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "backoff" } }));
            fx.Clock.Advance(backoff * 0.42);
        }
        var dead = await fx.ItemAsync(id);
        Assert.Equal(3, dead.State);
        Assert.Equal("boom 3", dead.LastError);
        var errors = await fx.ScalarAsync<string>("SELECT GROUP_CONCAT(CONCAT(attempt, ':', error) ORDER BY id) FROM item_errors WHERE item_id = @Id", new { Id = id });
        Assert.Equal("1:boom 1,2:boom 2,3:boom 3", errors);
        fx.Clock.Advance(TimeSpan.FromMinutes(10));
        Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "backoff" } }));
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT state FROM jobs WHERE id = @Id", new { Id = job }));
    }

    [Fact]
    public async Task Fail_with_retry_false_makes_the_item_dead_at_once()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 2, ["no-retry"]);
        using var http = fx.Worker();
        var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "no-retry" } });
        var r = await WorkFixture.FinishAsync(http, item, "fail", new { leaseToken = item.GetProperty("leaseToken").GetString(), error = "bad input", retry = false });
        Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        var row = await fx.ItemAsync(item.GetProperty("id").GetInt64());
        Assert.Equal(3, row.State);
        Assert.Equal("bad input", row.LastError);
        // The other item of the job is still served; the dead one never again.
        var next = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "no-retry" } });
        Assert.NotEqual(row.Id, next.GetProperty("id").GetInt64());
    }

    [Fact]
    public async Task An_error_over_4000_characters_is_a_400_naming_the_field()
    {
        using var http = fx.Worker();
        var r = await http.PostAsJsonAsync("/items/1/fail", new { leaseToken = new string('a', 32), error = new string('x', 4001) });
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains("\"error\"", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }
}
