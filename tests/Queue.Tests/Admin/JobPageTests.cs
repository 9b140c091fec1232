using System.Globalization;
using System.Net;
using System.Text.Json;
using AngleSharp.Dom;
using AngleSharp.Html.Dom;

namespace Queue.Tests.Admin;

/// <summary>The job page's actions, each through its form, checked in the database and in the audit log.</summary>
public sealed class JobPageTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    private static IElement FormFor(IHtmlDocument page, string handler) =>
        page.QuerySelectorAll("form").FirstOrDefault(f => (f.GetAttribute("action") ?? "").EndsWith("handler=" + handler, StringComparison.Ordinal))
        ?? throw new InvalidOperationException($"no {handler} form on the page");

    private async Task<(long Tenant, long Small, long Big)> TwoJobsAsync()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var small = await fx.Seed.JobAsync(tenant.Id, "small", 2);
        var big = await fx.Seed.JobAsync(tenant.Id, "big", 40);
        return (tenant.Id, small, big);
    }

    [Fact]
    public async Task An_override_takes_effect_in_the_ordering_at_once_and_is_audited_with_before_and_after()
    {
        var (tenantId, _, big) = await TwoJobsAsync();
        var lowest = await fx.Seed.ScalarAsync<long>("SELECT MIN(value) FROM ordering WHERE blocked = 0");
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        var form = page.QuerySelector("#override-form")!;
        // The form suggests the value that puts the job first.
        Assert.Equal((lowest - 1).ToString(CultureInfo.InvariantCulture), form.QuerySelector("input[name=priority]")!.GetAttribute("value"));
        Assert.Equal("24", form.QuerySelector("input[name=expiresInHours]")!.GetAttribute("value"));
        var before = DateTime.UtcNow;
        var after = await b.SubmitAndFollowAsync(form, new Dictionary<string, string> { ["reason"] = "customer escalation #42" });

        Assert.Equal("1", after.QuerySelector("#position")!.TextContent.Trim().Split(' ', '\n')[0]);
        Assert.Contains("customer escalation #42", after.QuerySelector("#reason")!.TextContent, StringComparison.Ordinal);
        var lanes = await fx.Seed.QueryAsync<(long Value, string Mode)>("SELECT value, mode FROM ordering WHERE job_id = @Id", new { Id = big });
        Assert.All(lanes, l => Assert.Equal((lowest - 1, "override"), l));
        var ov = (await fx.Seed.QueryAsync<(long Priority, string Reason, DateTime ExpiresAt, long TechnicianId)>(
            "SELECT priority, reason, expires_at, technician_id FROM overrides WHERE job_id = @Id AND active = 1", new { Id = big })).Single();
        Assert.Equal(lowest - 1, ov.Priority);
        Assert.Equal(fx.TechnicianId, ov.TechnicianId);
        Assert.InRange(ov.ExpiresAt, before.AddHours(24).AddMinutes(-1), DateTime.UtcNow.AddHours(24).AddMinutes(1));

        var audit = (await fx.Seed.QueryAsync<(string Actor, string Action, long TenantId, string Reason, string BeforeJson, string AfterJson)>(
            "SELECT actor, action, tenant_id, reason, before_json, after_json FROM audit_log WHERE job_id = @Id", new { Id = big })).Single();
        Assert.Equal((fx.Login, "override.set", tenantId, "customer escalation #42"), (audit.Actor, audit.Action, audit.TenantId, audit.Reason));
        using var bj = JsonDocument.Parse(audit.BeforeJson);
        using var aj = JsonDocument.Parse(audit.AfterJson);
        Assert.NotEqual("override", bj.RootElement.GetProperty("mode").GetString());
        Assert.Equal(40, bj.RootElement.GetProperty("active").GetInt64());
        Assert.Equal("override", aj.RootElement.GetProperty("mode").GetString());
        Assert.Equal(lowest - 1, aj.RootElement.GetProperty("value").GetInt64());
        Assert.Equal("customer escalation #42", aj.RootElement.GetProperty("override").GetProperty("reason").GetString());

        // The queue view shows it first, with its reason and expiry.
        var queue = await b.GetAsync("/queue");
        var first = queue.QuerySelector("#queue tbody tr")!;
        Assert.Equal(big.ToString(CultureInfo.InvariantCulture), first.GetAttribute("data-job"));
        Assert.Equal("1", first.QuerySelector(".pos")!.TextContent.Trim());
        Assert.Contains("customer escalation #42", first.QuerySelector(".reason")!.TextContent, StringComparison.Ordinal);
        Assert.Contains("expires", first.QuerySelector(".reason")!.TextContent, StringComparison.Ordinal);
    }

    [Fact]
    public async Task An_override_without_a_reason_or_with_a_bad_value_is_refused_with_messages_that_say_what_to_fix()
    {
        var (_, _, big) = await TwoJobsAsync();
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        var doc = await b.SubmitForPageAsync(page.QuerySelector("#override-form")!,
            new Dictionary<string, string> { ["priority"] = "first please", ["reason"] = " ", ["expiresInHours"] = "9999" });
        var form = doc.QuerySelector("#override-form")!;
        var errors = string.Join("\n", form.QuerySelectorAll(".error").Select(e => e.TextContent));
        Assert.Contains("whole number", errors, StringComparison.Ordinal);
        Assert.Contains("Give a reason", errors, StringComparison.Ordinal);
        Assert.Contains("0.1 to 720", errors, StringComparison.Ordinal);
        // What was typed stays in the form.
        Assert.Equal("first please", form.QuerySelector("input[name=priority]")!.GetAttribute("value"));
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM overrides WHERE job_id = @Id", new { Id = big }));
        Assert.Matches("^(smallest|oldest)$", await fx.Seed.ScalarAsync<string>("SELECT mode FROM ordering WHERE job_id = @Id LIMIT 1", new { Id = big }));
    }

    [Fact]
    public async Task Clearing_an_override_asks_first_then_puts_the_job_back_to_its_mode_value()
    {
        var (_, _, big) = await TwoJobsAsync();
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        page = await b.SubmitAndFollowAsync(page.QuerySelector("#override-form")!, new Dictionary<string, string> { ["priority"] = "-100", ["reason"] = "bump" });
        var confirm = await b.SubmitForPageAsync(FormFor(page, "ClearOverride"), new Dictionary<string, string> { ["reason"] = "customer happy" });
        Assert.NotNull(confirm.QuerySelector(".confirm"));
        Assert.Equal("override", await fx.Seed.ScalarAsync<string>("SELECT mode FROM ordering WHERE job_id = @Id LIMIT 1", new { Id = big }));
        await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        var lane = (await fx.Seed.QueryAsync<(long Value, string Mode)>("SELECT value, mode FROM ordering WHERE job_id = @Id LIMIT 1", new { Id = big })).Single();
        // Back to the current mode's value: the item count smallest-first, a rank value oldest-first.
        Assert.Equal(lane.Mode == "smallest" ? 40 : 10000 + 5 * await fx.Seed.ScalarAsync<long>("SELECT COUNT(DISTINCT job_id) FROM ordering WHERE job_id < @Id", new { Id = big }),
            lane.Value);
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM overrides WHERE job_id = @Id AND active = 1", new { Id = big }));
        Assert.Equal(["override.set", "override.clear"],
            await fx.Seed.QueryAsync<string>("SELECT action FROM audit_log WHERE job_id = @Id ORDER BY id", new { Id = big }));
    }

    [Fact]
    public async Task Cancel_asks_for_confirmation_and_then_cancels_the_ready_items_and_leaves_the_ordering()
    {
        var (_, small, big) = await TwoJobsAsync();
        await fx.Seed.LeaseAsync(big, 3, "w1", TimeSpan.FromMinutes(5));
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        var confirm = await b.SubmitForPageAsync(FormFor(page, "Cancel"), new Dictionary<string, string> { ["reason"] = "customer asked" });
        Assert.Contains("Cancel this job?", confirm.QuerySelector(".confirm")!.TextContent, StringComparison.Ordinal);
        Assert.Equal(1, await fx.Seed.ScalarAsync<int>("SELECT state FROM jobs WHERE id = @Id", new { Id = big }));
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Id AND state = 4", new { Id = big }));

        var done = await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        Assert.Contains("cancelled", done.QuerySelector(".flash")!.TextContent, StringComparison.Ordinal);
        Assert.Equal(3, await fx.Seed.ScalarAsync<int>("SELECT state FROM jobs WHERE id = @Id", new { Id = big }));
        Assert.Equal(37L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Id AND state = 4", new { Id = big }));
        Assert.Equal(3L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Id AND state = 1", new { Id = big }));
        Assert.Equal(37L, await fx.Seed.ScalarAsync<long>("SELECT items_cancelled FROM jobs WHERE id = @Id", new { Id = big }));
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = big }));
        Assert.Equal(1L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = small }));
        Assert.Equal("job.cancel", await fx.Seed.ScalarAsync<string>("SELECT action FROM audit_log WHERE job_id = @Id", new { Id = big }));

        // A second cancel changes nothing and says so.
        Assert.Null(FormForOrNull(done, "Cancel"));
    }

    private static IElement? FormForOrNull(IHtmlDocument page, string handler) =>
        page.QuerySelectorAll("form").FirstOrDefault(f => (f.GetAttribute("action") ?? "").EndsWith("handler=" + handler, StringComparison.Ordinal));

    [Fact]
    public async Task Block_takes_the_job_out_of_the_claim_order_and_unblock_puts_it_back()
    {
        var (_, _, big) = await TwoJobsAsync();
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        var confirm = await b.SubmitForPageAsync(FormFor(page, "Block"), new Dictionary<string, string> { ["reason"] = "poison documents" });
        Assert.Equal(0, await fx.Seed.ScalarAsync<int>("SELECT blocked FROM jobs WHERE id = @Id", new { Id = big }));
        page = await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        Assert.Equal(1, await fx.Seed.ScalarAsync<int>("SELECT blocked FROM jobs WHERE id = @Id", new { Id = big }));
        Assert.Equal(1, await fx.Seed.ScalarAsync<int>("SELECT MIN(blocked) FROM ordering WHERE job_id = @Id", new { Id = big }));
        Assert.Equal("—", page.QuerySelector("#position")!.TextContent.Trim()[..1]);

        var queue = await b.GetAsync("/queue?size=200");
        var rows = queue.QuerySelectorAll("#queue tbody tr").ToList();
        var row = rows.Single(r => r.GetAttribute("data-job") == big.ToString(CultureInfo.InvariantCulture));
        Assert.Contains("blocked", row.ClassName ?? "", StringComparison.Ordinal);
        Assert.Equal("—", row.QuerySelector(".pos")!.TextContent.Trim());
        Assert.All(rows.SkipWhile(r => r != row), r => Assert.Contains("blocked", r.ClassName ?? "", StringComparison.Ordinal));

        page = await b.SubmitAndFollowAsync(FormFor(page, "Unblock"), new Dictionary<string, string> { ["reason"] = "fixed" });
        Assert.Equal(0, await fx.Seed.ScalarAsync<int>("SELECT MAX(blocked) FROM ordering WHERE job_id = @Id", new { Id = big }));
        Assert.NotEqual("—", page.QuerySelector("#position")!.TextContent.Trim()[..1]);
        Assert.Equal(["job.block", "job.unblock"], await fx.Seed.QueryAsync<string>("SELECT action FROM audit_log WHERE job_id = @Id ORDER BY id", new { Id = big }));
    }

    [Fact]
    public async Task The_job_page_shows_items_by_state_and_dead_items_with_their_errors()
    {
        var (_, _, big) = await TwoJobsAsync();
        await fx.Seed.KillItemsAsync(big, 2, "OCR engine crashed");
        await fx.Seed.LeaseAsync(big, 5, "w1", TimeSpan.FromMinutes(5));
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        string Cell(string state) => page.QuerySelectorAll("#items tr").Single(r => r.QuerySelector("th")!.TextContent == state).QuerySelector("td")!.TextContent;
        Assert.Equal(("40", "33", "5", "0", "2", "0"), (Cell("total"), Cell("ready"), Cell("leased"), Cell("done"), Cell("dead"), Cell("cancelled")));
        var dead = page.QuerySelectorAll("table.dead tbody tr").ToList();
        Assert.Equal(2, dead.Count);
        Assert.Contains("OCR engine crashed (attempt 1)", dead[0].TextContent, StringComparison.Ordinal);
        Assert.Contains("OCR engine crashed (attempt 2)", dead[0].TextContent, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Requeueing_dead_items_makes_them_ready_again_with_fresh_attempts_and_brings_back_the_lanes()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.Seed.JobAsync(tenant.Id, "dying", 4);
        await fx.Seed.KillItemsAsync(job, 3, "bad scan");
        await fx.Seed.FinishAsync(job);
        Assert.Equal(2, await fx.Seed.ScalarAsync<int>("SELECT state FROM jobs WHERE id = @Id", new { Id = job }));
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{job}");

        // One item first, through its own row's form.
        var firstDead = await fx.Seed.ScalarAsync<long>("SELECT MIN(id) FROM items WHERE job_id = @Id AND state = 3", new { Id = job });
        var rowForm = page.QuerySelectorAll("table.dead form").First(f => f.QuerySelector("input[name=itemId]")!.GetAttribute("value") == firstDead.ToString(CultureInfo.InvariantCulture));
        var confirm = await b.SubmitForPageAsync(rowForm, new Dictionary<string, string> { ["reason"] = "scanner fixed" });
        Assert.Contains($"dead item {firstDead}", confirm.QuerySelector(".confirm")!.TextContent, StringComparison.Ordinal);
        page = await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        Assert.Equal((0, 0), (await fx.Seed.QueryAsync<(int State, int Attempts)>("SELECT state, attempts FROM items WHERE id = @Id", new { Id = firstDead })).Single());
        Assert.Equal(1, await fx.Seed.ScalarAsync<int>("SELECT state FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(2L, await fx.Seed.ScalarAsync<long>("SELECT items_dead FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(1L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM ordering WHERE job_id = @Id", new { Id = job }));

        // Then the rest, all at once.
        confirm = await b.SubmitForPageAsync(FormFor(page, "Requeue"), new Dictionary<string, string> { ["reason"] = "scanner fixed" });
        await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Id AND state = 3", new { Id = job }));
        Assert.Equal(3L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id = @Id AND state = 0 AND attempts = 0", new { Id = job }));
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT items_dead FROM jobs WHERE id = @Id", new { Id = job }));
        Assert.Equal(6L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM item_errors e JOIN items i ON i.id = e.item_id WHERE i.job_id = @Id", new { Id = job }));
        var audit = await fx.Seed.QueryAsync<string>("SELECT after_json FROM audit_log WHERE job_id = @Id AND action = 'job.requeue' ORDER BY id", new { Id = job });
        Assert.Equal(2, audit.Count);
        using var last = JsonDocument.Parse(audit[1]);
        Assert.Equal(2, last.RootElement.GetProperty("itemsChanged").GetInt64());
    }

    [Fact]
    public async Task Every_destructive_action_without_a_reason_is_refused_and_changes_nothing()
    {
        var (_, _, big) = await TwoJobsAsync();
        await fx.Seed.KillItemsAsync(big, 1, "x");
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{big}");
        foreach (var handler in new[] { "Cancel", "Block", "Requeue" })
        {
            var doc = await b.SubmitForPageAsync(FormFor(page, handler), new Dictionary<string, string> { ["reason"] = "", ["confirmed"] = "true" });
            Assert.Contains("Give a reason", doc.Body!.TextContent, StringComparison.Ordinal);
        }
        Assert.Equal((1, 0, 1L), (await fx.Seed.QueryAsync<(int, int, long)>("SELECT state, blocked, items_dead FROM jobs WHERE id = @Id", new { Id = big })).Single());
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM audit_log WHERE job_id = @Id", new { Id = big }));
    }

    [Fact]
    public async Task A_job_that_does_not_exist_is_a_404()
    {
        using var b = await fx.SignedInAsync();
        using var r = await b.Http.GetAsync(new Uri("/jobs/987654321", UriKind.Relative));
        Assert.Equal(HttpStatusCode.NotFound, r.StatusCode);
        var lookup = await b.GetAsync("/jobs?id=987654321");
        Assert.Contains("There is no job", lookup.Body!.TextContent, StringComparison.Ordinal);
    }
}
