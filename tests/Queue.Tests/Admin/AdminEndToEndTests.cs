using System.Globalization;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.RegularExpressions;
using Microsoft.Playwright;
using Queue.Local;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Admin;

/// <summary>
/// A technician at 3 a.m., in a real browser (Debian's headless Chromium) against real Kestrel servers: sign in, find
/// the big job far down the queue, bump it, see it first, and watch a worker's next claim hand out its item.
/// </summary>
[TakesAbout(18)]
public sealed class AdminEndToEndTests(DatabaseFixture fx) : IClassFixture<DatabaseFixture>
{
    private static readonly string[] ChromiumArgs =
        ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

    [Fact]
    public async Task A_technician_bumps_a_big_job_to_position_1_and_the_next_claim_serves_it()
    {
        const string password = "night shift password";
        var login = "night-" + Guid.NewGuid().ToString("N")[..6];
        await fx.Technicians.CreateAsync(login, password, default);
        var (_, customerKey) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"]));
        var workerKey = await fx.NewWorkerKeyAsync();

        // ASP.NET Core's own information lines (antiforgery, authentication) show in the failure message if a step fails.
        await using var admin = ServiceProcess.Start("Queue.Admin", fx.ConnectionString,
            new Dictionary<string, string> { ["Logging__LogLevel__Microsoft.AspNetCore"] = "Information" });
        await using var api = ServiceProcess.Start("Queue.Api", fx.ConnectionString);
        await Task.WhenAll(admin.WaitHealthyAsync(seconds: 120), api.WaitHealthyAsync(seconds: 120));

        // The customer submits through the real API: six small jobs, then a big one, which is last in both modes
        // (most items for smallest-first, newest for oldest-first).
        using var customer = api.ClientWithKey(customerKey);
        for (var i = 0; i < 6; i++)
        {
            await SubmitAsync(customer, $"small-{i}", 2);
        }
        var big = await SubmitAsync(customer, "big-invoices", 60);
        var seed = new AdminSeed(fx.DataSource);

        using var pw = await Playwright.CreateAsync();
        await using var browser = await pw.Chromium.LaunchAsync(new BrowserTypeLaunchOptions
        {
            ExecutablePath = "/usr/bin/chromium",
            Headless = true,
            Args = ChromiumArgs,
        });
        var context = await browser.NewContextAsync(new BrowserNewContextOptions { ViewportSize = new ViewportSize { Width = 1366, Height = 768 } });
        // Generous: this 2-core machine is shared, and a cold Razor page can take seconds under load.
        context.SetDefaultTimeout(90_000);
        var page = await context.NewPageAsync();
        var shots = ScreenshotDirectory();

        try
        {
            // Signing in: the queue sends us to the login page first.
            await page.GotoAsync(admin.Url + "/queue");
            Assert.Contains("/Account/Login", page.Url, StringComparison.Ordinal);
            await page.FillAsync("#Login", login);
            await page.FillAsync("#Password", password);
            await page.ClickAsync("button[type=submit]");
            await ArrivedAtAsync(page, "/queue");
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(shots, "1-queue-before.png"), FullPage = true });

            // The big job sits at a low position.
            var row = page.Locator($"#queue tr[data-job='{big}']");
            var before = int.Parse(await row.Locator(".pos").InnerTextAsync(), CultureInfo.InvariantCulture);
            Assert.Equal(7, before);

            await row.Locator("a").First.ClickAsync();
            await ArrivedAtAsync(page, $"/jobs/{big}");
            await page.FillAsync("#override-reason", "customer escalation: invoices due at 06:00");
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(shots, "2-job-before-bump.png"), FullPage = true });
            await page.ClickAsync("#override-form button[type=submit]");
            await page.WaitForSelectorAsync(".flash");
            Assert.Contains("Override set", await page.InnerTextAsync(".flash"), StringComparison.Ordinal);
            Assert.Equal("1", (await page.InnerTextAsync("#position")).Trim());
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(shots, "3-job-after-bump.png"), FullPage = true });

            await page.ClickAsync("header nav a[href='/queue']");
            await ArrivedAtAsync(page, "/queue");
            var first = page.Locator("#queue tbody tr").First;
            Assert.Equal(big.ToString(CultureInfo.InvariantCulture), await first.GetAttributeAsync("data-job"));
            Assert.Equal("1", (await first.Locator(".pos").InnerTextAsync()).Trim());
            Assert.Contains("customer escalation", await first.Locator(".reason").InnerTextAsync(), StringComparison.Ordinal);
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(shots, "4-queue-after-bump.png"), FullPage = true });

            // A worker's next claim (docs/CONTRACT.md POST /next) hands out the bumped job's first item.
            using var http = api.ClientWithKey(workerKey);
            using var claim = await http.PostAsJsonAsync(new Uri("/next", UriKind.Relative), new { worker = "e2e-worker", max = 1 });
            var body = await claim.Content.ReadAsStringAsync();
            Assert.True(claim.StatusCode == HttpStatusCode.OK, $"POST /next answered {(int)claim.StatusCode} (is the claim engine merged?): {body}");
            using var json = JsonDocument.Parse(body);
            var item = json.RootElement.GetProperty("items")[0];
            Assert.Equal(big, item.GetProperty("jobId").GetInt64());
            var lowestItem = await seed.ScalarAsync<long>("SELECT MIN(id) FROM items WHERE job_id = @Id", new { Id = big });
            Assert.Equal(lowestItem, item.GetProperty("id").GetInt64());

            // The workers page now shows who holds that lease.
            await page.ClickAsync("header nav a[href='/workers']");
            await ArrivedAtAsync(page, "/workers");
            Assert.Contains("e2e-worker", await page.InnerTextAsync("#holders"), StringComparison.Ordinal);
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(shots, "5-workers-after-claim.png"), FullPage = true });
            await page.GotoAsync(admin.Url + "/");
            await page.ScreenshotAsync(new PageScreenshotOptions { Path = Path.Combine(shots, "6-dashboard.png"), FullPage = true });
        }
        catch (Exception e) when (e is TimeoutException or PlaywrightException)
        {
            // A browser step that times out says only what it waited for; what the page and the Admin show says why.
            throw new TimeoutException($"{e.Message}\nThe page at {page.Url} shows:\n{await PageTextAsync(page)}\nThe Admin printed:\n{admin.Output}", e);
        }
    }

    /// <summary>
    /// Waits until the page's address ends with <paramref name="path"/>. Not <c>WaitForURLAsync</c>: when the address
    /// already matches, it checks the load state and then subscribes to the event, and a load that lands between the
    /// two is never seen (microsoft/playwright-dotnet#3364); that timed this test out once in CI. The assertion is
    /// polled by the Playwright driver, so there is no client-side event to miss, and the next locator waits for the
    /// new page's elements anyway.
    /// </summary>
    private static Task ArrivedAtAsync(IPage page, string path) =>
        Assertions.Expect(page).ToHaveURLAsync(new Regex(Regex.Escape(path) + "$"), new PageAssertionsToHaveURLOptions { Timeout = 90_000 });

    /// <summary>The page's visible text, or why it could not be read (the page may itself be what hangs).</summary>
    private static async Task<string> PageTextAsync(IPage page)
    {
        try
        {
            return await page.InnerTextAsync("body", new PageInnerTextOptions { Timeout = 5_000 });
        }
        catch (Exception unreadable) when (unreadable is TimeoutException or PlaywrightException)
        {
            return "(unreadable: " + unreadable.Message + ")";
        }
    }

    private static async Task<long> SubmitAsync(HttpClient customer, string name, int documents)
    {
        var docs = Enumerable.Range(0, documents).Select(d => new
        {
            name = $"{name}-{d}.txt",
            contentType = "text/plain",
            content = Convert.ToBase64String(System.Text.Encoding.UTF8.GetBytes($"page {d} of {name}")),
        }).ToArray();
        using var r = await customer.PostAsJsonAsync(new Uri("/jobs", UriKind.Relative), new { name, documents = docs });
        var body = await r.Content.ReadAsStringAsync();
        Assert.True(r.StatusCode == HttpStatusCode.Created, $"POST /jobs answered {(int)r.StatusCode}: {body}");
        using var json = JsonDocument.Parse(body);
        return json.RootElement.GetProperty("id").GetInt64();
    }

    /// <summary>TestResults/screenshots at the repository root, next to the test results ./test.sh writes.</summary>
    private static string ScreenshotDirectory()
    {
        var dir = new DirectoryInfo(AppContext.BaseDirectory);
        while (dir is not null && !File.Exists(Path.Combine(dir.FullName, "Queue.slnx")))
        {
            dir = dir.Parent;
        }
        var path = Path.Combine(dir?.FullName ?? AppContext.BaseDirectory, "TestResults", "screenshots");
        Directory.CreateDirectory(path);
        return path;
    }
}
