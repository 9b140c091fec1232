using System.Globalization;

namespace Queue.Tests.Admin;

/// <summary>Dashboard, workers, tenants and audit pages.</summary>
public sealed class DashboardAndListsTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    [Fact]
    public async Task The_dashboard_shows_the_mode_the_next_rewrite_depth_per_tenant_charts_the_oldest_job_and_workers()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var oldest = await fx.Seed.JobAsync(tenant.Id, "first-in", 3);
        var other = await fx.Seed.JobAsync(tenant.Id, "second", 10);
        await fx.Seed.LeaseAsync(other, 4, "ocr-7", TimeSpan.FromMinutes(5));
        await fx.Seed.KillItemsAsync(other, 1, "x");
        var now = DateTime.UtcNow;
        for (var m = 1; m <= 30; m++)
        {
            await fx.Seed.ExecuteAsync("""
                INSERT INTO snapshots (at, tenant_id, ready, leased, done, dead, cancelled, claims, completions)
                VALUES (@At, @T, 0, 0, 0, 0, 0, @Claims, @Completions)
                """, new { At = new DateTime(now.Year, now.Month, now.Day, now.Hour, now.Minute, 0, DateTimeKind.Utc).AddMinutes(-m), T = tenant.Id, Claims = m * 10, Completions = m * 9 });
        }
        using var b = await fx.SignedInAsync();
        var doc = await b.GetAsync("/");
        var mode = doc.QuerySelector("#mode")!.TextContent;
        Assert.Matches("smallest-first|oldest-first", mode);
        Assert.Contains("Next rewrite at", mode, StringComparison.Ordinal);
        Assert.Contains(":00:00 UTC", mode, StringComparison.Ordinal); // hourly periods by default

        var row = doc.QuerySelectorAll("#depth tbody tr").Single(r => r.QuerySelector("td")!.TextContent == tenant.Name);
        var cells = row.QuerySelectorAll("td").Select(c => c.TextContent.Trim()).ToList();
        Assert.Equal(new[] { tenant.Name, "2", "8", "4", "0", "1", "0" }, cells);

        var charts = doc.QuerySelectorAll("svg.chart");
        Assert.Equal(2, charts.Length);
        Assert.All(charts, c => Assert.NotNull(c.QuerySelector("polyline")));
        Assert.Contains("300", charts[0].QuerySelector("title")!.TextContent, StringComparison.Ordinal); // peak 30*10 claims per minute
        Assert.Contains("270", charts[1].QuerySelector("title")!.TextContent, StringComparison.Ordinal);

        var expectedOldest = await fx.Seed.ScalarAsync<long>("SELECT MIN(job_id) FROM ordering WHERE blocked = 0");
        Assert.True(expectedOldest <= oldest);
        Assert.Contains($"#{expectedOldest}", doc.QuerySelector("#oldest")!.TextContent, StringComparison.Ordinal);
        Assert.Contains("ocr-7: 4", doc.QuerySelector("#workers")!.TextContent, StringComparison.Ordinal);
        Assert.Null(doc.QuerySelector("script"));
        Assert.Null(doc.QuerySelector("link[href^=http], script[src^=http], img[src^=http]"));
    }

    [Fact]
    public async Task The_workers_page_shows_who_holds_leases_how_many_and_since_when()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.Seed.JobAsync(tenant.Id, "leased", 10);
        await fx.Seed.LeaseAsync(job, 3, "gpu-box-1", TimeSpan.FromMinutes(5));
        await fx.Seed.LeaseAsync(job, 2, "gpu-box-2", TimeSpan.FromMinutes(5));
        // What the claim path records about workers, one of which holds nothing now.
        await fx.Seed.ExecuteAsync("""
            INSERT INTO workers (name, first_seen_at, last_seen_at, claims, completions, failures)
            VALUES ('gpu-box-1', @Then, @Recent, 120, 117, 3), ('idle-box', @Then, @Recent, 42, 40, 2)
            """, new { Then = DateTime.UtcNow.AddHours(-3), Recent = DateTime.UtcNow.AddMinutes(-1) });
        using var b = await fx.SignedInAsync();
        var doc = await b.GetAsync("/workers");
        var rows = doc.QuerySelectorAll("#holders tbody tr").ToDictionary(r => r.QuerySelector("td")!.TextContent, r => r.QuerySelectorAll("td").Select(c => c.TextContent.Trim()).ToList());
        Assert.Equal("3", rows["gpu-box-1"][1]);
        Assert.Equal("2", rows["gpu-box-2"][1]);
        Assert.Contains("UTC", rows["gpu-box-1"][4], StringComparison.Ordinal);
        Assert.Contains("UTC", rows["gpu-box-1"][5], StringComparison.Ordinal);
        Assert.Equal(("120", "117", "3"), (rows["gpu-box-1"][7], rows["gpu-box-1"][8], rows["gpu-box-1"][9]));
        Assert.Equal(("0", "—", "42"), (rows["idle-box"][1], rows["idle-box"][4], rows["idle-box"][7]));
        Assert.Contains("1 min ago", rows["idle-box"][5], StringComparison.Ordinal);
        // Lease holders come first.
        Assert.Equal("idle-box", doc.QuerySelectorAll("#holders tbody tr")[^1].QuerySelector("td")!.TextContent);
    }

    [Fact]
    public async Task A_worker_key_is_shown_once_works_and_can_be_revoked_after_confirmation()
    {
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync("/workers");
        var issued = await b.SubmitForPageAsync(page.QuerySelectorAll("form").First(f => (f.GetAttribute("action") ?? "").EndsWith("handler=Issue", StringComparison.Ordinal)),
            new Dictionary<string, string> { ["label"] = "farm-a" });
        var secret = issued.QuerySelector("#new-key")!.TextContent.Trim();
        Assert.StartsWith("qw_", secret, StringComparison.Ordinal);
        var principal = await fx.Keys.ResolveAsync(secret, default);
        Assert.Equal(Queue.Core.Security.KeyRole.Worker, principal!.Role);

        var again = await b.GetAsync("/workers");
        Assert.DoesNotContain(secret, again.Body!.InnerHtml, StringComparison.Ordinal);
        var revoke = again.QuerySelectorAll("#keys form").First(f => f.QuerySelector("input[name=keyId]")!.GetAttribute("value") == principal.KeyId.ToString(CultureInfo.InvariantCulture));
        var confirm = await b.SubmitForPageAsync(revoke);
        Assert.NotNull(await fx.Keys.ResolveAsync(secret, default));
        await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        Assert.Null(await fx.Keys.ResolveAsync(secret, default));
        Assert.Equal(["key.issue", "key.revoke"], await fx.Seed.QueryAsync<string>(
            "SELECT action FROM audit_log WHERE action LIKE 'key.%' AND after_json LIKE @Prefix ORDER BY id", new { Prefix = $"%{secret[..10]}%" }));
    }

    [Fact]
    public async Task A_tenant_is_created_edited_and_given_a_customer_key_with_messages_that_say_what_to_fix()
    {
        using var b = await fx.SignedInAsync();
        var name = "acme-" + Guid.NewGuid().ToString("N")[..6];
        var page = await b.GetAsync("/tenants");
        var bad = await b.SubmitForPageAsync(page.QuerySelector("#create-tenant")!, new Dictionary<string, string>
        {
            ["Form.Name"] = "Bad Name!", ["Form.DefaultTasks"] = "text, OCR", ["Form.Weight"] = "0", ["Form.MaxAttempts"] = "many",
        });
        var errors = string.Join("\n", bad.QuerySelectorAll("#create-tenant .error").Select(e => e.TextContent));
        Assert.Contains("a-z, 0-9 and '-'", errors, StringComparison.Ordinal);
        Assert.Contains("'OCR' is not a task name", errors, StringComparison.Ordinal);
        Assert.Contains("'many' is not valid", errors, StringComparison.Ordinal);
        Assert.Equal("Bad Name!", bad.QuerySelector("#create-tenant input[name='Form.Name']")!.GetAttribute("value"));
        Assert.Null(await fx.Tenants.FindAsync("Bad Name!", default));

        var created = await b.SubmitAndFollowAsync(page.QuerySelector("#create-tenant")!, new Dictionary<string, string>
        {
            ["Form.Name"] = name, ["Form.DefaultTasks"] = "text, thumbnail", ["Form.MaxAttempts"] = "7",
        });
        var tenant = await fx.Tenants.FindAsync(name, default);
        Assert.NotNull(tenant);
        Assert.Equal(("text,thumbnail", 7), (tenant.DefaultTasks, tenant.MaxAttempts));

        var invalid = await b.SubmitForPageAsync(created.QuerySelector("#settings")!, new Dictionary<string, string> { ["Form.Weight"] = "5000" });
        Assert.Contains("must be 1 to 1000", invalid.QuerySelector("#settings")!.TextContent, StringComparison.Ordinal);
        var saved = await b.SubmitAndFollowAsync(created.QuerySelector("#settings")!, new Dictionary<string, string>
        {
            ["Form.Weight"] = "3", ["Form.RateLimit"] = "0", ["Form.RateBurst"] = "10", ["Form.DefaultTasks"] = "text",
        });
        tenant = await fx.Tenants.FindAsync(name, default);
        Assert.Equal((3, 0, 10, 7, "text"), (tenant!.Weight, tenant.RateLimit, tenant.RateBurst, tenant.MaxAttempts, tenant.DefaultTasks));

        var issued = await b.SubmitForPageAsync(saved.QuerySelectorAll("form").First(f => (f.GetAttribute("action") ?? "").EndsWith("handler=Issue", StringComparison.Ordinal)),
            new Dictionary<string, string> { ["label"] = "nightly" });
        var secret = issued.QuerySelector("#new-key")!.TextContent.Trim();
        var principal = await fx.Keys.ResolveAsync(secret, default);
        Assert.Equal((Queue.Core.Security.KeyRole.Customer, tenant.Id), (principal!.Role, principal.TenantId));
        var reloaded = await b.GetAsync($"/tenants/{tenant.Id}");
        Assert.DoesNotContain(secret, reloaded.Body!.InnerHtml, StringComparison.Ordinal);
        var confirm = await b.SubmitForPageAsync(reloaded.QuerySelector("#keys form")!);
        await b.SubmitAndFollowAsync(confirm.QuerySelector(".confirm form")!);
        Assert.Null(await fx.Keys.ResolveAsync(secret, default));

        var audit = await fx.Seed.QueryAsync<string>("SELECT action FROM audit_log WHERE tenant_id = @T ORDER BY id", new { T = tenant.Id });
        Assert.Equal(["tenant.create", "tenant.update", "key.issue", "key.revoke"], audit);
        var log = await b.GetAsync("/audit");
        Assert.Contains("weight", log.QuerySelector("table.audit")!.TextContent, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_key_of_another_tenant_cannot_be_revoked_from_this_tenant_s_page()
    {
        var (a, _) = await fx.NewCustomerAsync();
        var (_, otherKey) = await fx.NewCustomerAsync();
        var otherId = (await fx.Keys.ResolveAsync(otherKey, default))!.KeyId;
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/tenants/{a.Id}");
        // Posting to the revoke handler with the other tenant's key id is a 404, and the key keeps working.
        var token = page.QuerySelector("input[name=__RequestVerificationToken]")!.GetAttribute("value")!;
        using var content = new FormUrlEncodedContent(new Dictionary<string, string>
        {
            ["keyId"] = otherId.ToString(CultureInfo.InvariantCulture), ["confirmed"] = "true", ["__RequestVerificationToken"] = token,
        });
        using var revoke = await b.Http.PostAsync(new Uri($"/tenants/{a.Id}?handler=Revoke", UriKind.Relative), content);
        Assert.Equal(System.Net.HttpStatusCode.NotFound, revoke.StatusCode);
        Assert.NotNull(await fx.Keys.ResolveAsync(otherKey, default));
    }
}
