using System.Net;
using System.Net.Http.Headers;
using Queue.Core.Security;

namespace Queue.Tests.Admin;

/// <summary>Sign-in, the authorization policy, antiforgery, and API keys in the Admin app.</summary>
public sealed class AdminSecurityTests(AdminFixture fx) : IClassFixture<AdminFixture>
{
    private static readonly string[] Pages = ["/", "/queue", "/jobs", "/jobs/1", "/workers", "/tenants", "/tenants/1", "/audit"];

    [Fact]
    public async Task A_request_without_a_session_is_redirected_to_the_login_page()
    {
        using var b = fx.Admin.Browser();
        foreach (var page in Pages)
        {
            using var r = await b.Http.GetAsync(new Uri(page, UriKind.Relative));
            Assert.True(r.StatusCode == HttpStatusCode.Redirect, $"{page}: {(int)r.StatusCode}");
            Assert.StartsWith("/Account/Login", r.Headers.Location!.PathAndQuery(), StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task A_customer_or_worker_api_key_opens_nothing()
    {
        var (tenant, customerKey) = await fx.NewCustomerAsync();
        var workerKey = await fx.NewWorkerKeyAsync();
        var jobId = await fx.Seed.JobAsync(tenant.Id, "keyed", 2);
        foreach (var key in new[] { customerKey, workerKey })
        {
            using var b = fx.Admin.Browser();
            b.Http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
            foreach (var page in Pages.Append($"/jobs/{jobId}"))
            {
                using var r = await b.Http.GetAsync(new Uri(page, UriKind.Relative));
                Assert.True(r.StatusCode == HttpStatusCode.Redirect, $"{page} with a key: {(int)r.StatusCode}");
                Assert.StartsWith("/Account/Login", r.Headers.Location!.PathAndQuery(), StringComparison.Ordinal);
            }
            using var form = new FormUrlEncodedContent(new Dictionary<string, string> { ["reason"] = "x", ["confirmed"] = "true" });
            using var post = await b.Http.PostAsync(new Uri($"/jobs/{jobId}?handler=Cancel", UriKind.Relative), form);
            Assert.NotEqual(HttpStatusCode.OK, post.StatusCode);
            Assert.False(post.IsSuccessStatusCode);
        }
        Assert.Equal(1, await fx.Seed.ScalarAsync<int>("SELECT state FROM jobs WHERE id = @Id", new { Id = jobId }));
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM audit_log WHERE job_id = @Id", new { Id = jobId }));
    }

    [Fact]
    public async Task A_post_without_its_antiforgery_token_gets_400_and_changes_nothing()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobId = await fx.Seed.JobAsync(tenant.Id, "forged", 3);
        var valueBefore = await fx.Seed.ScalarAsync<long>("SELECT value FROM ordering WHERE job_id = @Id LIMIT 1", new { Id = jobId });
        using var b = await fx.SignedInAsync();
        var page = await b.GetAsync($"/jobs/{jobId}");
        var overrideForm = page.QuerySelector("#override-form")!;
        using (var r = await b.SubmitAsync(overrideForm, new Dictionary<string, string> { ["priority"] = "-5", ["reason"] = "forged" }, withToken: false))
        {
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        }
        var cancelForm = page.QuerySelectorAll("form").First(f => (f.GetAttribute("action") ?? "").Contains("handler=Cancel", StringComparison.Ordinal));
        using (var r = await b.SubmitAsync(cancelForm, new Dictionary<string, string> { ["reason"] = "forged", ["confirmed"] = "true" }, withToken: false))
        {
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        }
        // A token from another session is no better than none.
        using (var other = await fx.SignedInAsync())
        {
            var otherPage = await other.GetAsync($"/jobs/{jobId}");
            var foreignToken = otherPage.QuerySelector("input[name=__RequestVerificationToken]")!.GetAttribute("value")!;
            using var r = await b.SubmitAsync(cancelForm, new Dictionary<string, string> { ["reason"] = "forged", ["confirmed"] = "true", ["__RequestVerificationToken"] = foreignToken });
            Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        }
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM overrides WHERE job_id = @Id", new { Id = jobId }));
        Assert.Equal(1, await fx.Seed.ScalarAsync<int>("SELECT state FROM jobs WHERE id = @Id", new { Id = jobId }));
        Assert.Equal(valueBefore, await fx.Seed.ScalarAsync<long>("SELECT value FROM ordering WHERE job_id = @Id LIMIT 1", new { Id = jobId }));
        Assert.Equal(0L, await fx.Seed.ScalarAsync<long>("SELECT COUNT(*) FROM audit_log WHERE job_id = @Id", new { Id = jobId }));
    }

    [Fact]
    public async Task Every_form_on_every_page_carries_an_antiforgery_token()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobId = await fx.Seed.JobAsync(tenant.Id, "forms", 2);
        await fx.Seed.KillItemsAsync(jobId, 1, "boom");
        using var b = await fx.SignedInAsync();
        foreach (var url in new[] { "/", "/queue", "/jobs", $"/jobs/{jobId}", "/workers", "/tenants", $"/tenants/{tenant.Id}", "/audit" })
        {
            var doc = await b.GetAsync(url);
            foreach (var form in doc.QuerySelectorAll("form[method=post]"))
            {
                Assert.True(form.QuerySelector("input[name=__RequestVerificationToken]") is not null, $"a POST form on {url} has no antiforgery token: {form.OuterHtml[..Math.Min(200, form.OuterHtml.Length)]}");
            }
        }
    }

    [Fact]
    public async Task A_wrong_password_is_refused_and_repeated_failures_lock_the_account()
    {
        var login = "lock-" + Guid.NewGuid().ToString("N")[..6];
        await fx.Technicians.CreateAsync(login, AdminFixture.Password, default);
        using var b = fx.Admin.Browser();
        for (var i = 0; i < TechnicianService.MaxFailures; i++)
        {
            var page = await b.GetAsync("/Account/Login");
            var doc = await b.SubmitForPageAsync(page.QuerySelector("form")!, new Dictionary<string, string> { ["Login"] = login, ["Password"] = "wrong password " + i });
            Assert.Contains(i == TechnicianService.MaxFailures - 1 ? "locked" : "wrong", doc.Body!.TextContent, StringComparison.Ordinal);
        }
        // Now even the right password is refused until the lockout ends.
        var again = await b.GetAsync("/Account/Login");
        var locked = await b.SubmitForPageAsync(again.QuerySelector("form")!, new Dictionary<string, string> { ["Login"] = login, ["Password"] = AdminFixture.Password });
        Assert.Contains("locked", locked.Body!.TextContent, StringComparison.Ordinal);
        using var r = await b.Http.GetAsync(new Uri("/", UriKind.Relative));
        Assert.Equal(HttpStatusCode.Redirect, r.StatusCode);
    }

    [Fact]
    public async Task Signing_in_opens_the_pages_and_signing_out_closes_them()
    {
        using var b = await fx.SignedInAsync();
        var dash = await b.GetAsync("/");
        Assert.Contains(fx.Login, dash.Body!.TextContent, StringComparison.Ordinal);
        var logout = dash.QuerySelectorAll("form").First(f => (f.GetAttribute("action") ?? "").Contains("Logout", StringComparison.OrdinalIgnoreCase));
        using (var r = await b.SubmitAsync(logout))
        {
            Assert.Equal(HttpStatusCode.Redirect, r.StatusCode);
        }
        using var after = await b.Http.GetAsync(new Uri("/queue", UriKind.Relative));
        Assert.Equal(HttpStatusCode.Redirect, after.StatusCode);
    }
}
