using System.Globalization;
using System.Text.RegularExpressions;
using Microsoft.Playwright;
using Queue.Core.Security;
using Queue.Local;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Admin;

/// <summary>
/// The job page's what-if (issue 38), in Debian's headless Chromium against the real Admin: Preview shows where the
/// override would put the job and who moves back, saves nothing; Apply saves it, and the job is where the preview said.
/// </summary>
[TakesAbout(15)]
public sealed class WhatIfEndToEndTests(DatabaseFixture fx) : IClassFixture<DatabaseFixture>
{
    private static readonly string[] ChromiumArgs =
        ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

    [Fact]
    public async Task Preview_shows_the_new_position_and_who_moves_back_and_apply_puts_the_job_exactly_there()
    {
        const string password = "what if password";
        var login = "whatif-" + Guid.NewGuid().ToString("N")[..6];
        await fx.Technicians.CreateAsync(login, password, default);
        var (tenant, _) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"]));
        var seed = new AdminSeed(fx.DataSource);
        var small = new List<long>();
        foreach (var documents in new[] { 2, 4, 6, 8 })
        {
            small.Add(await seed.JobAsync(tenant.Id, $"job-{documents}", documents));
        }
        var big = await seed.JobAsync(tenant.Id, "big", 40);
        // Between the second and the third job in either mode (items 4 and 6, or ranks 10005 and 10010): position 3.
        var second = await seed.ScalarAsync<long>("SELECT MIN(value) FROM ordering WHERE job_id = @Id", new { Id = small[1] });
        var value = (second + 1).ToString(CultureInfo.InvariantCulture);

        // Seed policy: the job page's position is the seed walk's, so the two can be compared for any value.
        await using var admin = ServiceProcess.Start("Queue.Admin", fx.ConnectionString, new Dictionary<string, string> { ["Ordering__Policy"] = "seed" });
        await admin.WaitHealthyAsync(seconds: 120);
        using var pw = await Playwright.CreateAsync();
        await using var browser = await pw.Chromium.LaunchAsync(new BrowserTypeLaunchOptions { ExecutablePath = "/usr/bin/chromium", Headless = true, Args = ChromiumArgs });
        var context = await browser.NewContextAsync();
        context.SetDefaultTimeout(90_000);
        var page = await context.NewPageAsync();
        try
        {
            await page.GotoAsync(admin.Url + $"/jobs/{big}");
            await page.FillAsync("#Login", login);
            await page.FillAsync("#Password", password);
            await page.ClickAsync("button[type=submit]");
            await Assertions.Expect(page).ToHaveURLAsync(new Regex(Regex.Escape($"/jobs/{big}") + "$"), new PageAssertionsToHaveURLOptions { Timeout = 90_000 });
            Assert.Equal("5", (await page.InnerTextAsync("#position")).Trim());

            await page.FillAsync("#priority", value);
            await page.FillAsync("#override-reason", "what-if check");
            await page.ClickAsync("#preview-override");
            await page.WaitForSelectorAsync("#whatif");
            Assert.Equal("5", (await page.InnerTextAsync("#whatif-before")).Trim());
            var after = (await page.InnerTextAsync("#whatif-after")).Trim();
            Assert.Equal("3", after);
            Assert.StartsWith("2 jobs", (await page.InnerTextAsync("#whatif-count")).Trim(), StringComparison.Ordinal);
            foreach (var moved in small.Skip(2))
            {
                Assert.Equal("1", (await page.InnerTextAsync($"#whatif-moved tr[data-job='{moved}'] .by")).Trim());
            }
            // Preview saved nothing.
            Assert.Equal(0L, await seed.ScalarAsync<long>("SELECT COUNT(*) FROM overrides"));
            Assert.Equal(0L, await seed.ScalarAsync<long>("SELECT COUNT(*) FROM audit_log WHERE job_id = @Id", new { Id = big }));

            await page.ClickAsync("#apply-override");
            await page.WaitForSelectorAsync(".flash");
            Assert.Contains("Override set", await page.InnerTextAsync(".flash"), StringComparison.Ordinal);
            Assert.Equal(after, (await page.InnerTextAsync("#position")).Trim());
            Assert.Equal(["override.set"], await seed.QueryAsync<string>("SELECT action FROM audit_log WHERE job_id = @Id", new { Id = big }));
        }
        catch (Exception e) when (e is TimeoutException or PlaywrightException)
        {
            throw new TimeoutException($"{e.Message}\nThe page at {page.Url}\nThe Admin printed:\n{admin.Output}", e);
        }
    }
}
