using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text.RegularExpressions;
using Dapper;
using HdrHistogram;
using MySqlConnector;
using Queue.Bench.Harness;
using Queue.Core.Data;
using Queue.Core.Security;
using Queue.Bench.Sql;
using Queue.Core.Sql;

namespace Queue.Bench;

/// <summary>
/// <c>admin</c>: the technicians' pages against 100k jobs in the ordering (200k lanes, 400k items), through the real
/// Queue.Admin process over HTTP, signed in with a cookie like a browser. Measures the queue view's first page, deep
/// keyset pages, job pages (whose position is counted in the index), the dashboard, and setting an override.
/// </summary>
public static partial class AdminBench
{
    private const int Jobs = 100_000;

    public static async Task<int> RunAsync(string[] args)
    {
        var jobs = args.Length > 0 ? int.Parse(args[0], CultureInfo.InvariantCulture) : Jobs;
        var report = new Report();
        await using var env = await BenchEnvironment.StartAsync("1G");
        var seedWatch = Stopwatch.StartNew();
        await SeedAsync(env.ConnectionString, jobs);
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"seeded {jobs:N0} jobs in {seedWatch.Elapsed.TotalSeconds:F1} s"));

        await using var db = new MySqlDataSourceBuilder(QueueDatabase.Normalize(env.ConnectionString)).Build();
        const string password = "bench technician password";
        await new TechnicianService(db, TimeProvider.System).CreateAsync("bench", password, default);
        var admin = await env.StartServiceAsync("Queue.Admin");

        using var handler = new HttpClientHandler { CookieContainer = new CookieContainer(), AllowAutoRedirect = false };
        using var http = new HttpClient(handler) { BaseAddress = new Uri(admin.Url), Timeout = TimeSpan.FromSeconds(60) };
        await SignInAsync(http, "bench", password);

        Console.WriteLine();
        Console.WriteLine($"{"scenario",-44} {"rate",12} {"unit",-8} latency");
        await using var rss = new RssSampler(admin.RssBytes);

        // Warm-up: the first request of each page compiles views and fills pools.
        foreach (var url in new[] { "/queue", "/", "/jobs/1", "/workers" })
        {
            await GetAsync(http, url);
        }

        var first = await MeasureAsync("GET /queue, first page (50 jobs)", 200, _ => GetAsync(http, "/queue"), admin);

        // Deep pages: follow the keyset links, then jump to the last pages through the cursor of a late job.
        var deep = Report.NewHistogram();
        var page = await GetAsync(http, "/queue");
        var sw = Stopwatch.StartNew();
        var followed = 0;
        for (var i = 0; i < 100 && NextLink(page) is { } next; i++)
        {
            var t = Stopwatch.GetTimestamp();
            page = await GetAsync(http, next);
            Report.Record(deep, t);
            followed++;
        }
        var lastCursors = await LateCursorsAsync(db, 50);
        foreach (var cursor in lastCursors)
        {
            var t = Stopwatch.GetTimestamp();
            await GetAsync(http, "/queue?after=" + cursor);
            Report.Record(deep, t);
        }
        Report.Row($"GET /queue, deep pages ({followed + lastCursors.Count} x 50 jobs)", (followed + lastCursors.Count) / sw.Elapsed.TotalSeconds, deep, admin.RssBytes());

        List<long> ids;
        await using (var conn = await db.OpenConnectionAsync())
        {
            ids = (await conn.QueryAsync<long>(AdminBenchSql.RandomJobs, new { Count = 200 })).AsList();
        }
        var jobPage = await MeasureAsync("GET /jobs/{id}, random jobs", ids.Count, i => GetAsync(http, $"/jobs/{ids[i]}"), admin);
        var dashboard = await MeasureAsync("GET / (dashboard)", 30, _ => GetAsync(http, "/"), admin);
        var workers = await MeasureAsync("GET /workers", 30, _ => GetAsync(http, "/workers"), admin);

        // Setting an override: load the job page for its token, post the form, follow nothing.
        var bump = Report.NewHistogram();
        sw.Restart();
        for (var i = 0; i < 50; i++)
        {
            var id = ids[i];
            var html = await GetAsync(http, $"/jobs/{id}");
            var token = TokenRegex().Match(html).Groups[1].Value;
            using var form = new FormUrlEncodedContent(new Dictionary<string, string>
            {
                ["__RequestVerificationToken"] = WebUtility.HtmlDecode(token),
                ["priority"] = (-1_000_000 - i).ToString(CultureInfo.InvariantCulture),
                ["reason"] = "bench bump",
                ["expiresInHours"] = "24",
            });
            var t = Stopwatch.GetTimestamp();
            using var r = await http.PostAsync(new Uri($"/jobs/{id}?handler=Override", UriKind.Relative), form);
            Report.Record(bump, t);
            if (r.StatusCode != HttpStatusCode.Redirect)
            {
                throw new InvalidOperationException($"override POST answered {(int)r.StatusCode}");
            }
        }
        Report.Row("POST override (set, audited, lanes moved)", 50 / sw.Elapsed.TotalSeconds, bump, admin.RssBytes());

        // The preview page: the next rewrite's first 50 positions and today's first 1,000, both streamed over every job.
        var modes = new[] { "smallest", "oldest" };
        var policies = new[] { "tenant-fair", "seed" };
        await GetAsync(http, "/preview");
        var preview = await MeasureAsync($"GET /preview ({jobs / 1000}k jobs)", 12,
            i => GetAsync(http, $"/preview?mode={modes[i % 2]}&policy={policies[i / 2 % 2]}"), admin);
        var peak = rss.Peak;

        report.Target("queue-first-page-p99", Ms(first, 99), "<= 50 ms", Report.P(first, 99) <= 50);
        report.Target("queue-deep-page-p99", Ms(deep, 99), "<= 50 ms at any depth", Report.P(deep, 99) <= 50);
        report.Target("job-page-p99", Ms(jobPage, 99), "<= 100 ms", Report.P(jobPage, 99) <= 100);
        report.Target("dashboard-p99", Ms(dashboard, 99), "<= 1000 ms with 100k active jobs", Report.P(dashboard, 99) <= 1000);
        report.Target("override-p99", Ms(bump, 99), "<= 100 ms", Report.P(bump, 99) <= 100);
        report.Target(string.Create(CultureInfo.InvariantCulture, $"preview-{jobs / 1000}k-p99"), Ms(preview, 99), "<= 2000 ms", Report.P(preview, 99) <= 2000);
        report.Target("admin-rss", string.Create(CultureInfo.InvariantCulture, $"{peak / 1048576.0:F0} MB"), "<= 200 MB", peak <= 200L * 1048576);
        return report.Finish();
    }

    private static string Ms(HistogramBase h, double p) => string.Create(CultureInfo.InvariantCulture, $"{Report.P(h, p):F1} ms");

    private static async Task<LongConcurrentHistogram> MeasureAsync(string name, int count, Func<int, Task> request, Queue.Local.ServiceProcess admin)
    {
        var h = Report.NewHistogram();
        var sw = Stopwatch.StartNew();
        for (var i = 0; i < count; i++)
        {
            var t = Stopwatch.GetTimestamp();
            await request(i);
            Report.Record(h, t);
        }
        Report.Row(name, count / sw.Elapsed.TotalSeconds, h, admin.RssBytes());
        return h;
    }

    private static async Task<string> GetAsync(HttpClient http, string url)
    {
        using var r = await http.GetAsync(new Uri(url, UriKind.Relative));
        var body = await r.Content.ReadAsStringAsync();
        if (r.StatusCode != HttpStatusCode.OK)
        {
            throw new InvalidOperationException($"GET {url} answered {(int)r.StatusCode}");
        }
        return body;
    }

    private static async Task SignInAsync(HttpClient http, string login, string password)
    {
        var html = await GetAsync(http, "/Account/Login");
        using var form = new FormUrlEncodedContent(new Dictionary<string, string>
        {
            ["__RequestVerificationToken"] = WebUtility.HtmlDecode(TokenRegex().Match(html).Groups[1].Value),
            ["Login"] = login,
            ["Password"] = password,
        });
        using var r = await http.PostAsync(new Uri("/Account/Login", UriKind.Relative), form);
        if (r.StatusCode != HttpStatusCode.Redirect)
        {
            throw new InvalidOperationException($"sign-in answered {(int)r.StatusCode}");
        }
    }

    private static string? NextLink(string html) =>
        NextRegex().Match(html) is { Success: true } a && HrefRegex().Match(a.Value) is { Success: true } m ? WebUtility.HtmlDecode(m.Groups[1].Value) : null;

    /// <summary>Cursors just before the last jobs of the ordering, as a technician paging to the end would hold.</summary>
    private static async Task<List<string>> LateCursorsAsync(MySqlDataSource db, int count)
    {
        await using var conn = await db.OpenConnectionAsync();
        var rows = await conn.QueryAsync<(long Value, long JobId)>(AdminBenchSql.LastJobs, new { Count = count * 3 });
        return rows.Where((_, i) => i % 3 == 2).Select(r => string.Create(CultureInfo.InvariantCulture, $"0:{r.Value}:{r.JobId}:99000")).ToList();
    }

    private static async Task SeedAsync(string cs, int jobs)
    {
        await using var conn = new MySqlConnection(cs);
        await conn.OpenAsync();
        var now = DateTime.UtcNow;
        var minute = new DateTime(now.Year, now.Month, now.Day, now.Hour, now.Minute, 0, DateTimeKind.Utc);
        foreach (var sql in new[]
        {
            AdminBenchSql.Tenants, AdminBenchSql.Jobs, AdminBenchSql.Items, AdminBenchSql.Leases, AdminBenchSql.Dead,
            AdminBenchSql.DeadCounters, AdminBenchSql.Lanes, AdminBenchSql.Overrides, AdminBenchSql.OverrideLanes,
            AdminBenchSql.Snapshots, AdminBenchSql.Analyze,
        })
        {
            await conn.ExecuteAsync(new CommandDefinition(sql, new { Now = now, Minute = minute, Jobs = jobs }, commandTimeout: 600));
        }
    }

    [GeneratedRegex("name=\"__RequestVerificationToken\" type=\"hidden\" value=\"([^\"]+)\"")]
    private static partial Regex TokenRegex();

    [GeneratedRegex("<a [^>]*rel=\"next\"[^>]*>")]
    private static partial Regex NextRegex();

    [GeneratedRegex("href=\"([^\"]+)\"")]
    private static partial Regex HrefRegex();
}
