using System.Collections.Concurrent;
using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Http.Json;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Local;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>
/// Required reliability test 6: <c>kill -9</c> of mariadbd while a real Api process takes about 200 submissions a
/// second, then a restart on the same data directory. Every job that got a 201 exists whole, no job exists in part, no
/// call got a 500, and the Api works again without being restarted.
/// </summary>
[TakesAbout(18)]
public sealed class DatabaseCrashTests
{
    private const int Producers = 8;

    [Fact]
    public async Task A_database_killed_under_submissions_loses_no_acknowledged_job_leaves_none_half_made_and_the_api_reconnects()
    {
        var dir = Path.Combine(Path.GetTempPath(), "queue-crash-" + Guid.NewGuid().ToString("N")[..12]);
        var port = PrivateMariaDb.FreePort();
        var server = await PrivateMariaDb.StartOrAttachAsync(dir, port, tiedToThisProcess: true);
        try
        {
            var cs = await server.CreateDatabaseAsync("crash");
            string key;
            await using (var own = await OwnDatabase.PrepareAsync(cs, "crash", "a", "b"))
            {
                key = own.CustomerKey;
            }
            await using var api = ServiceProcess.Start("Queue.Api", cs, new Dictionary<string, string> { ["Jobs__DatabaseWaitMilliseconds"] = "3000" });
            await api.WaitHealthyAsync();
            using var http = new HttpClient { BaseAddress = new Uri(api.Url), Timeout = TimeSpan.FromSeconds(30) };
            http.DefaultRequestHeaders.Authorization = new("Bearer", key);

            var acknowledged = new ConcurrentBag<long>();
            var statuses = new ConcurrentBag<HttpStatusCode>();
            using var stop = new CancellationTokenSource();
            var producers = Enumerable.Range(0, Producers).Select(p => Task.Run(async () =>
            {
                for (var n = 0; !stop.IsCancellationRequested && n < 5000; n++)
                {
                    var started = Stopwatch.GetTimestamp();
                    try
                    {
                        using var r = await http.PostAsJsonAsync("/jobs", new
                        {
                            name = $"p{p}-{n}",
                            documents = new[] { new { name = "x.txt", content = B64($"x{n}") }, new { name = "y.txt", content = B64($"y{n}") } },
                        });
                        statuses.Add(r.StatusCode);
                        if (r.StatusCode == HttpStatusCode.Created)
                        {
                            acknowledged.Add((await r.Content.ReadFromJsonAsync<System.Text.Json.JsonElement>()).GetProperty("id").GetInt64());
                        }
                    }
                    catch (HttpRequestException)
                    {
                        statuses.Add(0); // the connection dropped: like a 5xx, the job may or may not exist
                    }
                    // About 25 calls a second per producer: 200 a second in all.
                    var rest = TimeSpan.FromMilliseconds(40) - Stopwatch.GetElapsedTime(started);
                    if (rest > TimeSpan.Zero)
                    {
                        await Task.Delay(rest);
                    }
                }
            })).ToList();

            await Eventually.UntilAsync(() => acknowledged.Count >= 200, "200 jobs acknowledged before the crash");
            var pid = int.Parse((await File.ReadAllTextAsync(Path.Combine(dir, "mariadbd.pid"))).Trim(), CultureInfo.InvariantCulture);
            using (var kill = Process.Start("kill", ["-9", pid.ToString(CultureInfo.InvariantCulture)]))
            {
                await kill.WaitForExitAsync();
            }
            var beforeRestart = acknowledged.Count;
            await Task.Delay(TimeSpan.FromSeconds(2)); // the scenario: the load goes on against a dead database
            server = await PrivateMariaDb.StartOrAttachAsync(dir, port, tiedToThisProcess: true);
            await Eventually.UntilAsync(() => acknowledged.Count >= beforeRestart + 200, "200 more jobs acknowledged after the restart", seconds: 60);
            await stop.CancelAsync();
            await Task.WhenAll(producers);

            Assert.False(statuses.Contains(HttpStatusCode.InternalServerError),
                "a submission got 500:\n" + string.Join('\n', api.Output.Split('\n').Where(l => l.Contains("Exception", StringComparison.Ordinal)).Distinct().Take(20)));
            Assert.All(statuses, s => Assert.True(s is HttpStatusCode.Created or HttpStatusCode.ServiceUnavailable or 0, $"a submission got {(int)s}"));
            await using var check = new MySqlDataSourceBuilder(QueueDatabase.Normalize(cs)).Build();
            await using var conn = await check.OpenConnectionAsync();
            var jobs = (await conn.QueryAsync<(long Id, int Documents, long ItemsTotal, long Docs, long Items, long Lanes)>("""
                SELECT j.id, j.documents, j.items_total,
                       (SELECT COUNT(*) FROM documents d WHERE d.job_id = j.id),
                       (SELECT COUNT(*) FROM items i WHERE i.job_id = j.id),
                       (SELECT COUNT(*) FROM ordering o WHERE o.job_id = j.id)
                FROM jobs j
                """)).ToDictionary(j => j.Id);
            Assert.All(acknowledged, id => Assert.True(jobs.ContainsKey(id), $"acknowledged job {id} is missing"));
            Assert.All(jobs.Values, j =>
            {
                Assert.Equal((2, 4L, 2L, 4L, 2L), (j.Documents, j.ItemsTotal, j.Docs, j.Items, j.Lanes));
            });
        }
        finally
        {
            await server.DisposeAsync();
            Directory.Delete(dir, recursive: true);
        }
    }
}
