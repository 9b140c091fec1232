using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Cluster;

/// <summary>
/// Issue "Past one machine": the cluster of scripts/cluster.sh (primary and replica, three Api processes behind
/// HAProxy, two Admin processes) with every customer and worker call made through the balancer. It runs alone: it
/// starts eight processes of its own and two of its tests measure rates and latencies.
/// </summary>
[Collection(RunsAlone.Name)]
public sealed class ClusterTests(ClusterFixture fx) : IClassFixture<ClusterFixture>
{
    [Fact]
    public async Task Submit_upload_status_explain_claim_and_complete_all_work_through_the_balancer()
    {
        var (task, key) = await fx.TenantAsync();
        using var customer = ClusterFixture.Client(fx.Balancer, key);
        using var worker = ClusterFixture.Client(fx.Balancer, fx.WorkerKey);
        var job = (await customer.CreateJobAsync(new { name = "through-the-balancer", tasks = new[] { task }, open = true })).GetProperty("id").GetInt64();
        using (var upload = await customer.PostAsync(U($"/jobs/{job}/documents?name=a.txt"), new StringContent("hello", System.Text.Encoding.UTF8, "text/plain")))
        {
            Assert.Equal(HttpStatusCode.Created, upload.StatusCode);
        }
        using (var status = await customer.GetAsync(U($"/jobs/{job}")))
        {
            Assert.Equal(1, (await status.BodyAsync()).GetProperty("items").GetProperty("total").GetInt32());
        }
        using (var explain = await customer.GetAsync(U($"/jobs/{job}/explain")))
        {
            Assert.Equal(HttpStatusCode.OK, explain.StatusCode);
        }
        // The list may lag (it reads the replica); a download reads its bytes from the replica once it has them, else
        // from the primary: right either way.
        long docId = 0;
        await Eventually.UntilAsync(async () =>
        {
            using var docs = await customer.GetAsync(U($"/jobs/{job}/documents"));
            var list = (await docs.BodyAsync()).GetProperty("documents");
            docId = list.GetArrayLength() == 1 ? list[0].GetProperty("id").GetInt64() : 0;
            return docId != 0;
        }, "the upload in the document list");
        Assert.Equal("hello", await customer.GetStringAsync(U($"/jobs/{job}/documents/{docId}")));
        using var next = await worker.PostAsJsonAsync(U("/next"), new { worker = "w", tasks = new[] { task }, max = 1, wait = 5 });
        var item = (await next.BodyAsync()).GetProperty("items")[0];
        using var doc = new HttpRequestMessage(HttpMethod.Get, U($"/items/{item.GetProperty("id").GetInt64()}/document"));
        doc.Headers.Add("Lease-Token", item.GetProperty("leaseToken").GetString());
        using (var bytes = await worker.SendAsync(doc))
        {
            Assert.Equal("hello", await bytes.Content.ReadAsStringAsync());
        }
        using var done = await worker.PostAsJsonAsync(U($"/items/{item.GetProperty("id").GetInt64()}/complete"), new { leaseToken = item.GetProperty("leaseToken").GetString() });
        Assert.Equal(HttpStatusCode.NoContent, done.StatusCode);
        Assert.Equal(1, await fx.ScalarAsync("SELECT items_done FROM jobs WHERE id = @job", new { job }));
    }

    [Fact]
    public async Task A_worker_waiting_on_one_Api_process_gets_work_submitted_through_another_at_once()
    {
        var (task, key) = await fx.TenantAsync();
        using var waiting = ClusterFixture.Client(new Uri(fx.Apis[0].Url), fx.WorkerKey);
        using var other = ClusterFixture.Client(new Uri(fx.Apis[1].Url), key);
        var latencies = new List<double>();
        for (var round = 0; round < 5; round++)
        {
            var poll = waiting.PostAsJsonAsync(U("/next"), new { worker = "waiter", tasks = new[] { task }, max = 1, wait = 20 });
            // The scenario: a worker already long-polling when the work arrives through another process (had it not
            // been waiting yet, it would find the work without being woken).
            await Task.Delay(300);
            await other.CreateJobAsync(new { name = $"wake-{round}", tasks = new[] { task }, documents = new[] { new { name = "d.txt", content = B64("x") } } });
            var submitted = Stopwatch.GetTimestamp();
            using var r = await poll;
            latencies.Add(Stopwatch.GetElapsedTime(submitted).TotalMilliseconds);
            var item = (await r.BodyAsync()).GetProperty("items")[0];
            using var c = await waiting.PostAsJsonAsync(U($"/items/{item.GetProperty("id").GetInt64()}/complete"), new { leaseToken = item.GetProperty("leaseToken").GetString() });
        }
        // Without the wake-up, the other process's work is found by the 5 s poll of this cluster's Api processes.
        Assert.True(latencies.Max() < 1000, $"wake-up latencies (ms): {string.Join(", ", latencies.Select(l => l.ToString("0")))}");
    }

    [Fact]
    public async Task Killing_one_Api_process_under_load_loses_and_duplicates_no_item()
    {
        const int Items = 300;
        var (task, key) = await fx.TenantAsync();
        using var customer = ClusterFixture.Client(fx.Balancer, key);
        var job = (await customer.CreateJobAsync(new
        {
            name = "kill-an-api",
            tasks = new[] { task },
            documents = Enumerable.Range(0, Items).Select(i => new { name = $"d{i}.txt", content = B64($"doc {i}") }).ToArray(),
        })).GetProperty("id").GetInt64();

        // Completions each worker saw answered 204. A completion whose answer died with the process is done in the
        // database but not here, so the end is read from the database, not from this count.
        var completed = new ConcurrentBag<long>();
        using var stop = new CancellationTokenSource();
        async Task WorkAsync(int w)
        {
            using var http = ClusterFixture.Client(fx.Balancer, fx.WorkerKey);
            while (!stop.IsCancellationRequested)
            {
                try
                {
                    using var next = await http.PostAsJsonAsync(U("/next"), new { worker = $"w{w}", tasks = new[] { task }, max = 1, wait = 1, lease = 10 }, stop.Token);
                    if (next.StatusCode != HttpStatusCode.OK)
                    {
                        continue; // 204 (nothing now: leases of the killed process's claims expire in 10 s), 502/503 while it dies
                    }
                    var item = (await next.BodyAsync()).GetProperty("items")[0];
                    using var done = await http.PostAsJsonAsync(U($"/items/{item.GetProperty("id").GetInt64()}/complete"),
                        new { leaseToken = item.GetProperty("leaseToken").GetString() }, stop.Token);
                    if (done.StatusCode == HttpStatusCode.NoContent)
                    {
                        completed.Add(item.GetProperty("id").GetInt64());
                    }
                }
                catch (HttpRequestException)
                {
                    // The connection went down with the process; the worker carries on, as a real one would.
                }
                catch (OperationCanceledException) when (stop.IsCancellationRequested)
                {
                    return;
                }
            }
        }
        var workers = Enumerable.Range(0, 8).Select(WorkAsync).ToList();
        Task? restart = null;
        try
        {
            // Killed while the eight workers are at it and nine tenths of the items are still to do: waiting for a third
            // only added two seconds.
            await Eventually.UntilAsync(() => completed.Count >= Items / 10, "a tenth of the items are done");
            fx.KillApi(2);
            // Back behind the balancer while the other two finish, not after: no claim is tied to the process that made
            // it, so the killed one's items still come back only when their leases and reservations run out, whoever
            // claims them then; and the start-up's seconds overlap that wait.
            restart = fx.RestartApiAsync(2);
            await Eventually.UntilAsync(async () => await fx.ScalarAsync("SELECT items_done FROM jobs WHERE id = @job", new { job }) == Items,
                "every item done", seconds: 90);
        }
        finally
        {
            await stop.CancelAsync();
            await Task.WhenAll(workers);
            await (restart ?? fx.RestartApiAsync(2));
        }

        Assert.Equal(completed.Count, completed.Distinct().Count()); // no item was completed twice
        Assert.InRange(completed.Count, Items - 8, Items); // at most one answer per worker lost with the process
        Assert.Equal(0, await fx.ScalarAsync("SELECT COUNT(*) FROM items WHERE job_id = @job AND state <> 2", new { job }));
        Assert.Equal(Items, await fx.ScalarAsync("SELECT COUNT(*) FROM items WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task Reads_go_to_the_primary_while_the_replica_is_stopped_and_back_to_the_replica_after_it_starts()
    {
        var (task, key) = await fx.TenantAsync();
        using var customer = ClusterFixture.Client(fx.Balancer, key);
        await Eventually.UntilAsync(async () => await ReadsFromReplicaAsync() == ClusterFixture.ApiCount, "every Api process reads from the replica");

        await fx.Db.StopReplicaAsync();
        try
        {
            for (var i = 0; i < 6; i++)
            {
                var id = (await customer.CreateJobAsync(new { name = $"while-down-{i}", tasks = new[] { task } })).GetProperty("id").GetInt64();
                using var list = await customer.GetAsync(U("/jobs?limit=10"));
                Assert.Equal(HttpStatusCode.OK, list.StatusCode);
                Assert.Contains((await list.BodyAsync()).GetProperty("jobs").EnumerateArray(), j => j.GetProperty("id").GetInt64() == id);
            }
            Assert.Equal(0, await ReadsFromReplicaAsync());
        }
        finally
        {
            await fx.Db.StartReplicaAsync();
        }
        await Eventually.UntilAsync(async () => await ReadsFromReplicaAsync() == ClusterFixture.ApiCount, "reads return to the replica");
        // Reads may lag by design (up to Cluster:MaxReplicaLagSeconds); once the replica has caught up it has every job.
        await fx.Db.WaitCaughtUpAsync(TimeSpan.FromSeconds(60));
        using var again = await customer.GetAsync(U("/jobs?limit=10"));
        Assert.Equal(6, (await again.BodyAsync()).GetProperty("jobs").GetArrayLength());
    }

    [Fact]
    public async Task A_tenant_rate_limit_holds_across_three_Api_processes()
    {
        const int Rate = 30;
        var (_, key) = await fx.TenantAsync(rateLimit: Rate, rateBurst: Rate);
        await fx.WaitAllApisLiveAsync();
        using var customer = ClusterFixture.Client(fx.Balancer, key);
        var accepted = new ConcurrentBag<TimeSpan>();
        var start = Stopwatch.GetTimestamp();
        var window = TimeSpan.FromSeconds(7);
        async Task SendAsync()
        {
            while (Stopwatch.GetElapsedTime(start) < window)
            {
                // Stamped when sent, not when answered: answers still in flight when the window closes, or sent before
                // the bursts were spent, would otherwise land in the steady count (up to 12 senders at each end).
                var sent = Stopwatch.GetElapsedTime(start);
                using var r = await customer.GetAsync(U("/jobs?limit=1"));
                if (r.IsSuccessStatusCode)
                {
                    accepted.Add(sent);
                }
                else
                {
                    Assert.Equal(HttpStatusCode.TooManyRequests, r.StatusCode);
                }
            }
        }
        await Task.WhenAll(Enumerable.Range(0, 12).Select(_ => SendAsync()));
        // Past the first two seconds the bursts are spent; what is accepted after is the refill rate of the cluster.
        var steady = accepted.Count(t => t >= TimeSpan.FromSeconds(2)) / (window.TotalSeconds - 2);
        Assert.InRange(steady, Rate * 0.9, Rate * 1.1);
    }

    [Fact]
    public async Task A_login_made_on_one_Admin_process_is_valid_on_the_other()
    {
        var login = "tech-" + Guid.NewGuid().ToString("N")[..6];
        const string Password = "correct horse battery staple";
        await new Queue.Core.Security.TechnicianService(fx.Source, TimeProvider.System).CreateAsync(login, Password, default);
        var cookies = new CookieContainer();
        using var first = new HttpClient(new HttpClientHandler { CookieContainer = cookies, AllowAutoRedirect = false }) { BaseAddress = new Uri(fx.Admins[0].Url) };
        using var b = new Queue.Tests.Admin.AdminBrowser(first);
        var page = await b.GetAsync("/Account/Login");
        using (var signIn = await b.SubmitAsync(page.QuerySelector("form")!, new Dictionary<string, string> { ["Login"] = login, ["Password"] = Password }))
        {
            Assert.Equal(HttpStatusCode.Redirect, signIn.StatusCode);
        }
        // Cookies are per host, not per port: the second Admin gets the cookie the first one issued.
        using var second = new HttpClient(new HttpClientHandler { CookieContainer = cookies, AllowAutoRedirect = false }) { BaseAddress = new Uri(fx.Admins[1].Url) };
        using var dashboard = await second.GetAsync(U("/"));
        Assert.Equal(HttpStatusCode.OK, dashboard.StatusCode);
        Assert.Contains(login, await dashboard.Content.ReadAsStringAsync(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_revoked_key_is_refused_by_every_Api_process_within_the_key_cache_time()
    {
        var issued = await fx.Keys.IssueAsync(Queue.Core.Security.KeyRole.Worker, null, "to-revoke", default);
        // Every process has the key cached as valid before it is revoked.
        foreach (var api in fx.Apis)
        {
            using var http = ClusterFixture.Client(new Uri(api.Url), issued.Secret);
            using var r = await http.PostAsJsonAsync(U("/next"), new { worker = "r", max = 1, wait = 0 });
            Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        }
        Assert.True(await fx.Keys.RevokeAsync(issued.Id, default));
        var revokedAt = Stopwatch.GetTimestamp();
        foreach (var api in fx.Apis)
        {
            using var http = ClusterFixture.Client(new Uri(api.Url), issued.Secret);
            await Eventually.UntilAsync(async () =>
            {
                using var r = await http.PostAsJsonAsync(U("/next"), new { worker = "r", max = 1, wait = 0 });
                return r.StatusCode == HttpStatusCode.Unauthorized;
            }, "the revoked key is refused");
        }
        // Within Auth:KeyCacheSeconds as this cluster sets it (docs/DESIGN.md "Scaling out"), and a second of margin for
        // a loaded machine.
        Assert.True(Stopwatch.GetElapsedTime(revokedAt) < TimeSpan.FromSeconds(ClusterFixture.KeyCacheSeconds + 1),
            $"refused everywhere after {Stopwatch.GetElapsedTime(revokedAt)}");
    }

    /// <summary>How many Api processes say (on /metrics) that their reads go to the replica now.</summary>
    private async Task<int> ReadsFromReplicaAsync()
    {
        var n = 0;
        foreach (var api in fx.Apis)
        {
            using var http = new HttpClient();
            var text = await http.GetStringAsync(new Uri(api.Url + "/metrics"));
            n += text.Split('\n').Any(l => l.StartsWith("queue_reads_from_replica 1", StringComparison.Ordinal)) ? 1 : 0;
        }
        return n;
    }
}
