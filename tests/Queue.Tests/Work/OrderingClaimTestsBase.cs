using Queue.Core.Data;
using Queue.Core.Ordering;
using Microsoft.Extensions.DependencyInjection;
using Queue.Tests.Infrastructure;
using Queue.Tests.Jobs;

namespace Queue.Tests.Work;

/// <summary>
/// The single-tenant ordering tests, for any fixture: Fairness/TenantFairOrderingClaimTests runs them again with
/// Ordering:Policy = tenant-fair, which must keep the seed's order within one tenant.
/// </summary>
public abstract class OrderingClaimTestsBase<TFixture>(TFixture fx) where TFixture : WorkFixture
{
    [Fact]
    public async Task Smallest_first_serves_the_job_with_the_fewest_open_items_then_the_lowest_item_id()
    {
        // The fixture's clock is shared: another test of the class may have moved it into an odd hour (oldest-first).
        var now = fx.Clock.GetUtcNow();
        if (fx.Service<OrderingCalendar>().Current.Mode != OrderingMode.Smallest)
        {
            fx.Clock.SetUtcNow(new DateTimeOffset(now.Year, now.Month, now.Day, now.Hour, 0, 0, TimeSpan.Zero).AddHours(1).AddMinutes(1));
        }
        Assert.Equal(OrderingMode.Smallest, fx.Service<OrderingCalendar>().Current.Mode);
        var (tenant, _) = await fx.NewCustomerAsync();
        var big = await fx.NewJobAsync(tenant.Id, 5, ["order-small"]);
        var small = await fx.NewJobAsync(tenant.Id, 2, ["order-small"]);
        var mid = await fx.NewJobAsync(tenant.Id, 3, ["order-small"]);
        using var http = fx.Worker();
        var order = new List<(long Job, long Id)>();
        for (var i = 0; i < 10; i++)
        {
            var item = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-small" } });
            order.Add((item.GetProperty("jobId").GetInt64(), item.GetProperty("id").GetInt64()));
        }
        Assert.Equal([small, small, mid, mid, mid, big, big, big, big, big], order.Select(o => o.Job));
        foreach (var g in order.GroupBy(o => o.Job))
        {
            Assert.Equal(g.Select(o => o.Id).Order(), g.Select(o => o.Id));
        }
    }

    [Fact]
    public async Task Equal_values_go_to_the_older_job_and_a_blocked_job_is_skipped()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var older = await fx.NewJobAsync(tenant.Id, 2, ["order-tie"]);
        var newer = await fx.NewJobAsync(tenant.Id, 2, ["order-tie"]);
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        await using (var tx = await conn.BeginReadCommittedAsync(default))
        {
            await fx.Service<OrderingLanes>().SetBlockedAsync(conn, tx, older, true, default);
            await tx.CommitAsync();
        }
        using var http = fx.Worker();
        Assert.Equal(newer, (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-tie" } })).GetProperty("jobId").GetInt64());
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        await using (var tx = await conn.BeginReadCommittedAsync(default))
        {
            await fx.Service<OrderingLanes>().SetBlockedAsync(conn, tx, older, false, default);
            await tx.CommitAsync();
        }
        // Unblocked, the older job (equal value: 2 open items against the newer job's 2) wins the tie.
        Assert.Equal(older, (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-tie" } })).GetProperty("jobId").GetInt64());
    }

    [Fact]
    public async Task An_override_wins_over_the_ordering_value()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 1, ["order-override"]);
        var bumped = await fx.NewJobAsync(tenant.Id, 50, ["order-override"]);
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        await using (var tx = await conn.BeginReadCommittedAsync(default))
        {
            await fx.Service<OrderingLanes>().ApplyOverrideAsync(conn, tx, bumped, -1000, default);
            await tx.CommitAsync();
        }
        using var http = fx.Worker();
        Assert.Equal(bumped, (await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-override" } })).GetProperty("jobId").GetInt64());
    }

    [Fact]
    public async Task Oldest_first_serves_the_older_job_even_when_it_is_bigger()
    {
        // Into the next odd hour: oldest-first. Jobs created now get provisional values in that mode.
        MoveToNextOddHour();
        var (tenant, _) = await fx.NewCustomerAsync();
        var older = await fx.NewJobAsync(tenant.Id, 6, ["order-oldest"]);
        var newer = await fx.NewJobAsync(tenant.Id, 1, ["order-oldest"]);
        using var http = fx.Worker();
        var jobs = new List<long>();
        for (var i = 0; i < 7; i++)
        {
            jobs.Add((await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-oldest" } })).GetProperty("jobId").GetInt64());
        }
        Assert.Equal([older, older, older, older, older, older, newer], jobs);
    }

    [Fact]
    public async Task In_an_oldest_first_period_an_upload_keeps_its_jobs_place_and_a_job_that_ran_dry_comes_back_behind_the_others()
    {
        MoveToNextOddHour();
        var (_, key) = await fx.NewCustomerAsync();
        using var customer = fx.Api.CreateClient();
        customer.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", key);
        var dry = await customer.OpenJobAsync(["order-upload"]);
        var placed = await customer.OpenJobAsync(["order-upload"]);
        await UploadAsync(customer, dry, "d0");
        await UploadAsync(customer, placed, "p0");
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-upload" } });
        Assert.Equal(dry, first.GetProperty("jobId").GetInt64());
        Assert.Equal(System.Net.HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, first, "complete")).StatusCode);
        Assert.True(await Eventually.HoldsAsync(async () => await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = dry }) == 0,
            TimeSpan.FromSeconds(10)), "the lanes of the job that ran dry were never removed");

        // The older job, without lanes now, is placed as the newest; the other keeps the oldest-first value it holds
        // (its placement reads the short facts, without the next oldest-first value).
        await UploadAsync(customer, dry, "d1");
        await UploadAsync(customer, placed, "p1");
        var order = new List<long>();
        for (var i = 0; i < 3; i++)
        {
            order.Add((await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "order-upload" } })).GetProperty("jobId").GetInt64());
        }
        Assert.Equal([placed, placed, dry], order);
    }

    private static async Task UploadAsync(HttpClient customer, long job, string text)
    {
        using var r = await customer.UploadRawAsync(job, System.Text.Encoding.UTF8.GetBytes(text), text + ".txt");
        Assert.Equal(System.Net.HttpStatusCode.Created, r.StatusCode);
    }

    private void MoveToNextOddHour()
    {
        var now = fx.Clock.GetUtcNow();
        fx.Clock.SetUtcNow(new DateTimeOffset(now.Year, now.Month, now.Day, now.Hour, 0, 0, TimeSpan.Zero).AddHours(now.Hour % 2 == 0 ? 1 : 2).AddMinutes(1));
        Assert.Equal(OrderingMode.Oldest, fx.Service<OrderingCalendar>().Current.Mode);
    }

    [Fact]
    public async Task A_worker_gets_only_the_tasks_it_asks_for_and_any_task_when_it_names_none()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 3, ["filter-a", "filter-b"]);
        using var http = fx.Worker();
        var onlyB = await WorkFixture.ClaimAsync(http, new { tasks = new[] { "filter-b" }, max = 10 });
        Assert.Equal(3, onlyB.Length);
        Assert.All(onlyB, i => Assert.Equal("filter-b", i.GetProperty("task").GetString()));
        Assert.Empty(await WorkFixture.ClaimAsync(http, new { tasks = new[] { "filter-b", "filter-c" } }));
        var both = await WorkFixture.ClaimAsync(http, new { tasks = new[] { "filter-c", "filter-a" }, max = 10 });
        Assert.Equal(3, both.Length);
        Assert.All(both, i => Assert.Equal("filter-a", i.GetProperty("task").GetString()));
        Assert.All(both, i => Assert.Equal(job, i.GetProperty("jobId").GetInt64()));
        Assert.All(both, i => Assert.Equal(tenant.Name, i.GetProperty("tenant").GetString()));
        Assert.All(both, i => Assert.Equal("text/plain", i.GetProperty("contentType").GetString()));
        Assert.All(both, i => Assert.StartsWith("d", i.GetProperty("documentName").GetString(), StringComparison.Ordinal));
    }
}
