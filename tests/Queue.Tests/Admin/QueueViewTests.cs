using System.Globalization;
using AngleSharp.Html.Dom;

namespace Queue.Tests.Admin;

/// <summary>The queue view: claim order, positions, reasons, and keyset pages.</summary>
public sealed class QueueViewTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    private static List<(long Job, string Pos)> Rows(IHtmlDocument doc) =>
        doc.QuerySelectorAll("#queue tbody tr")
            .Select(r => (long.Parse(r.GetAttribute("data-job")!, CultureInfo.InvariantCulture), r.QuerySelector(".pos")!.TextContent.Trim()))
            .ToList();

    [Fact]
    public async Task The_queue_view_shows_the_claim_order_with_positions_and_pages_by_keyset()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var i = 0; i < 7; i++)
        {
            jobs.Add(await fx.Seed.JobAsync(tenant.Id, $"job-{i}", 1 + i, "text", "thumbnail"));
        }
        // The order a claim walks: unblocked lanes by (value, job_id).
        var expected = (await fx.Seed.QueryAsync<long>(
            "SELECT job_id FROM ordering WHERE blocked = 0 AND tenant_id = @T GROUP BY value, job_id ORDER BY value, job_id", new { T = tenant.Id })).ToList();
        Assert.Equal(7, expected.Count);

        using var b = await fx.SignedInAsync();
        var seen = new List<(long Job, string Pos)>();
        var url = $"/queue?size=3&tenant={tenant.Name}";
        var pages = 0;
        while (true)
        {
            var doc = await b.GetAsync(url);
            pages++;
            seen.AddRange(Rows(doc));
            var next = doc.QuerySelector("a[rel=next]");
            if (next is null)
            {
                break;
            }
            url = next.GetAttribute("href")!;
        }
        Assert.Equal(3, pages);
        Assert.Equal(expected, seen.Select(s => s.Job));
        Assert.Equal(Enumerable.Range(1, 7).Select(i => i.ToString(CultureInfo.InvariantCulture)), seen.Select(s => s.Pos));

        // Each row says why it is there, and how much is left.
        var first = await b.GetAsync($"/queue?tenant={tenant.Name}");
        var row = first.QuerySelector($"#queue tr[data-job='{jobs[0]}']")!;
        Assert.Matches("smallest-first|oldest-first", row.QuerySelector(".reason")!.TextContent);
        Assert.Contains("text,thumbnail", row.TextContent, StringComparison.Ordinal);
        Assert.Equal("2", row.QuerySelectorAll("td")[3].TextContent.Trim());
    }

    [Fact]
    public async Task A_job_whose_items_are_all_leased_has_no_position_and_does_not_count_for_the_others()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var a = await fx.Seed.JobAsync(tenant.Id, "a", 1);
        var busy = await fx.Seed.JobAsync(tenant.Id, "busy", 1);
        await fx.Seed.LeaseAsync(busy, 1, "w", TimeSpan.FromMinutes(10));
        // What a claim does when it finds a lane with nothing claimable: it raises the hint to the lease expiry.
        await fx.Seed.ExecuteAsync("UPDATE ordering SET available_at = DATE_ADD(UTC_TIMESTAMP(6), INTERVAL 10 MINUTE) WHERE job_id = @Id", new { Id = busy });
        using var b = await fx.SignedInAsync();
        var rows = Rows(await b.GetAsync($"/queue?tenant={tenant.Name}"));
        Assert.Equal(new[] { (a, "1"), (busy, "—") }, rows.Where(r => r.Job == a || r.Job == busy).OrderBy(r => r.Pos == "—").ToList());
        var page = await b.GetAsync($"/jobs/{busy}");
        Assert.Contains("nothing claimable", page.QuerySelector("#position")!.TextContent, StringComparison.Ordinal);
    }

    [Fact]
    public async Task The_task_filter_shows_what_a_worker_asking_for_that_task_gets()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var textOnly = await fx.Seed.JobAsync(tenant.Id, "text-only", 1, "text");
        var thumbs = await fx.Seed.JobAsync(tenant.Id, "thumbs", 1, "thumbnail");
        using var b = await fx.SignedInAsync();
        var rows = Rows(await b.GetAsync("/queue?task=thumbnail&size=200"));
        Assert.Contains(rows, r => r.Job == thumbs);
        Assert.DoesNotContain(rows, r => r.Job == textOnly);
        var bad = await b.GetAsync("/queue?task=NOT%20A%20TASK");
        Assert.Contains("is not a task name", bad.Body!.TextContent, StringComparison.Ordinal);
        var damaged = await b.GetAsync("/queue?after=garbage");
        Assert.Contains("damaged", damaged.Body!.TextContent, StringComparison.Ordinal);
    }
}
