using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Local;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>
/// Required reliability test 7: the database hangs (<c>kill -STOP mariadbd</c>) for 10 s under a real Api process. Every
/// request answers 503 with Retry-After within its bound instead of hanging, threads and memory stay bounded, and after
/// <c>kill -CONT</c> work flows again within 5 s with no lease left behind by the callers who got 503.
/// </summary>
[TakesAbout(17)]
public sealed class DatabaseHangTests
{
    [Fact]
    public async Task While_the_database_is_stopped_requests_get_a_quick_503_and_work_resumes_at_once_after_it_continues()
    {
        await using var server = await PrivateMariaDb.StartEphemeralAsync("256M");
        var cs = await server.CreateDatabaseAsync("hang");
        await using var own = await OwnDatabase.PrepareAsync(cs, "hang", "hang");
        var (db, customerKey, workerKey) = (own.Source, own.CustomerKey, own.WorkerKey);
        await using var api = ServiceProcess.Start("Queue.Api", cs, new Dictionary<string, string>
        {
            ["Limits__RequestTimeoutSeconds"] = "3",
            ["Claims__DatabaseWaitMilliseconds"] = "3000",
            ["Jobs__DatabaseWaitMilliseconds"] = "3000",
        });
        await api.WaitHealthyAsync();
        using var customer = api.ClientWithKey(customerKey);
        using var worker = api.ClientWithKey(workerKey);
        var job = (await customer.CreateJobAsync(new
        {
            name = "through-a-hang",
            tasks = new[] { "hang" },
            documents = Enumerable.Range(0, 40).Select(i => new { name = $"d{i}", content = B64($"d{i}") }).ToArray(),
        })).GetProperty("id").GetInt64();
        var held = new List<long>();
        await ClaimAndCompleteAsync(worker, held); // warm: every path has its connections
        var pid = int.Parse(await File.ReadAllTextAsync(Path.Combine(server.Directory, "mariadbd.pid")), CultureInfo.InvariantCulture);

        Signal("STOP", pid);
        var stopped = Stopwatch.StartNew();
        List<(string What, HttpStatusCode Status, bool RetryAfter, TimeSpan Took)> answers;
        long threads, rss;
        try
        {
            var calls = Enumerable.Range(0, 10).SelectMany(i => new[]
            {
                TimedAsync("status", () => customer.GetAsync(U($"/jobs/{job}"))),
                TimedAsync("next", () => worker.PostAsJsonAsync("/next", new { tasks = new[] { "hang" }, worker = $"w{i}" })),
                TimedAsync("create", () => customer.PostAsJsonAsync("/jobs", new { name = $"during-{i}", tasks = new[] { "hang" } })),
            }).ToList();
            answers = [.. await Task.WhenAll(calls)];
            threads = ProcStatus(api.Pid, "Threads:");
            rss = api.RssBytes();
            // The scenario: the database stays stopped for 10 s in all, while the answers above came back.
            var rest = TimeSpan.FromSeconds(10) - stopped.Elapsed;
            if (rest > TimeSpan.Zero)
            {
                await Task.Delay(rest);
            }
        }
        finally
        {
            Signal("CONT", pid);
        }

        Assert.All(answers, a =>
        {
            Assert.True(a.Status == HttpStatusCode.ServiceUnavailable, $"{a.What} answered {(int)a.Status} during the hang");
            Assert.True(a.RetryAfter, $"{a.What}'s 503 has no Retry-After");
            Assert.True(a.Took < TimeSpan.FromSeconds(12), $"{a.What} took {a.Took.TotalSeconds:F1} s");
        });
        Assert.True(threads < 300, $"{threads} threads during the hang");
        Assert.True(rss < 600L * 1024 * 1024, $"RSS {rss / 1024 / 1024} MB during the hang");

        var resumed = Stopwatch.StartNew();
        await Eventually.UntilAsync(async () => await ClaimAndCompleteAsync(worker, held), "a claim and a completion succeed again", seconds: 5);
        Assert.True(resumed.Elapsed < TimeSpan.FromSeconds(5), $"work resumed after {resumed.Elapsed.TotalSeconds:F1} s");

        // Nothing the 503 callers were about to get stays leased: every worker lease left is one a caller holds.
        await Eventually.UntilAsync(async () =>
        {
            await using var conn = await db.OpenConnectionAsync();
            var leased = (await conn.QueryAsync<long>("SELECT id FROM items WHERE state = 1 AND lease_expires_at IS NOT NULL")).ToHashSet();
            return leased.SetEquals(held.Skip(held.Count - leased.Count)) && leased.Count <= 1;
        }, "the leases of callers who got 503 are given back", seconds: 20);
    }

    /// <summary>Claims one item and completes it; the last one claimed stays in <paramref name="held"/> only while leased.</summary>
    private static async Task<bool> ClaimAndCompleteAsync(HttpClient worker, List<long> held)
    {
        using var next = await worker.PostAsJsonAsync("/next", new { tasks = new[] { "hang" }, worker = "steady" });
        if (next.StatusCode != HttpStatusCode.OK)
        {
            return false;
        }
        var item = (await next.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items")[0];
        var id = item.GetProperty("id").GetInt64();
        held.Add(id);
        using var done = await worker.PostAsJsonAsync($"/items/{id}/complete", new { leaseToken = item.GetProperty("leaseToken").GetString() });
        if (done.StatusCode == HttpStatusCode.NoContent)
        {
            held.Remove(id);
            return true;
        }
        return false;
    }

    private static async Task<(string, HttpStatusCode, bool, TimeSpan)> TimedAsync(string what, Func<Task<HttpResponseMessage>> call)
    {
        var started = Stopwatch.GetTimestamp();
        using var r = await call();
        return (what, r.StatusCode, r.Headers.RetryAfter is not null, Stopwatch.GetElapsedTime(started));
    }

    private static void Signal(string signal, int pid)
    {
        using var kill = Process.Start("kill", ["-" + signal, pid.ToString(CultureInfo.InvariantCulture)]);
        kill.WaitForExit();
        Assert.Equal(0, kill.ExitCode);
    }

    private static long ProcStatus(int pid, string field) =>
        long.Parse(File.ReadLines($"/proc/{pid}/status").First(l => l.StartsWith(field, StringComparison.Ordinal))[field.Length..].Trim(),
            CultureInfo.InvariantCulture);
}
