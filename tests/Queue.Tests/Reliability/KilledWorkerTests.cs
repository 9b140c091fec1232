using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using Dapper;
using Queue.Tests.Client;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>
/// Required reliability test 1 (docs/DESIGN.md "Invariants that failures must not break"): a real worker process
/// (the <c>queue work</c> command) holding 100 leases is killed with SIGKILL.
/// </summary>
[TakesAbout(11)]
public sealed class KilledWorkerTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    private const int Items = 100;
    private const int LeaseSeconds = 10;

    [Fact]
    public async Task A_worker_killed_holding_100_leases_loses_none_and_they_are_claimable_only_after_the_lease_expires()
    {
        const string task = "kill-nine";
        var (tenantId, key) = await fx.CustomerAsync(task, maxAttempts: 5);
        var customer = fx.Api.ClientWithKey(key);
        var job = (await customer.CreateJobAsync(new
        {
            name = "held-by-a-dying-worker",
            tasks = new[] { task },
            documents = Enumerable.Range(0, Items).Select(i => new { name = $"d{i}.txt", content = B64($"doc {i}") }).ToArray(),
        })).GetProperty("id").GetInt64();

        using var worker = StartWorker(task, "doomed");
        try
        {
            await Eventually.UntilAsync(async () => await LeasedByAsync(job, "doomed") == Items, "the worker holds all 100 leases");
        }
        finally
        {
            worker.Kill(entireProcessTree: true); // SIGKILL: no release, no goodbye
            await worker.WaitForExitAsync();
        }
        var killedAt = DateTime.UtcNow;
        var held = (await QueryAsync<(long Id, byte[] Token, DateTime DueAt)>(
            "SELECT id, lease_token, due_at FROM items WHERE job_id = @job AND state = 1", job)).ToDictionary(r => r.Id);
        Assert.Equal(Items, held.Count);

        // Before expiry: nothing of the job is claimable.
        using var http = new HttpClient { BaseAddress = fx.BaseAddress };
        http.DefaultRequestHeaders.Authorization = new("Bearer", fx.WorkerKey);
        if (held.Values.Min(h => h.DueAt) > DateTime.UtcNow.AddSeconds(1))
        {
            using var early = await http.PostAsJsonAsync("/next", new { tasks = new[] { task }, max = 100, worker = "early" });
            Assert.Equal(HttpStatusCode.NoContent, early.StatusCode);
        }

        // After expiry: every one of the 100, each handed out once, as a second attempt.
        var claimed = new List<JsonElement>();
        await Eventually.UntilAsync(async () =>
        {
            using var r = await http.PostAsJsonAsync("/next", new { tasks = new[] { task }, max = 100, worker = "heir", wait = 1 });
            if (r.StatusCode == HttpStatusCode.OK)
            {
                claimed.AddRange((await r.Content.ReadFromJsonAsync<JsonElement>()).GetProperty("items").EnumerateArray());
            }
            return claimed.Count >= Items;
        }, "the expired leases are claimed again", seconds: 60);
        Assert.True(DateTime.UtcNow >= held.Values.Min(h => h.DueAt), "an item was handed out again before its lease expired");
        Assert.Equal(held.Keys.Order(), claimed.Select(c => c.GetProperty("id").GetInt64()).Order());
        Assert.All(claimed, c => Assert.Equal(2, c.GetProperty("attempt").GetInt32()));

        // Never two live leases on one item: each item has exactly the new lease, and the dead worker's token is refused.
        Assert.Equal(Items, await LeasedByAsync(job, "heir"));
        var stale = held.First();
        using var late = await http.PostAsJsonAsync($"/items/{stale.Key}/complete", new { leaseToken = Convert.ToHexStringLower(stale.Value.Token) });
        Assert.Equal(HttpStatusCode.Conflict, late.StatusCode);
        Assert.Equal(Items, await CountAsync("SELECT COUNT(*) FROM item_errors e JOIN items i ON i.id = e.item_id WHERE i.job_id = @job AND e.error = 'lease expired'", job));
        Assert.Equal(Items, await CountAsync("SELECT items_total - items_done - items_dead - items_cancelled FROM jobs WHERE id = @job", job));
        Assert.True(DateTime.UtcNow - killedAt < TimeSpan.FromSeconds(LeaseSeconds + 50));
    }

    private Process StartWorker(string task, string name)
    {
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var a in new[]
        {
            Path.Combine(AppContext.BaseDirectory, "Queue.Cli.dll"), "--url", fx.BaseAddress.ToString(), "--key", fx.WorkerKey,
            "work", "--tasks", task, "--concurrency", Items.ToString(System.Globalization.CultureInfo.InvariantCulture),
            "--lease", LeaseSeconds.ToString(System.Globalization.CultureInfo.InvariantCulture), "--worker", name, "--", "sleep", "600",
        })
        {
            psi.ArgumentList.Add(a);
        }
        var p = Process.Start(psi)!;
        p.OutputDataReceived += (_, _) => { };
        p.ErrorDataReceived += (_, _) => { };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        return p;
    }

    private Task<long> LeasedByAsync(long job, string worker) =>
        CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job AND state = 1 AND lease_expires_at IS NOT NULL AND worker = @worker AND due_at > UTC_TIMESTAMP(6)", job, worker);

    private async Task<long> CountAsync(string sql, long job, string? worker = null)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<long>(sql, new { job, worker });
    }

    private async Task<IEnumerable<T>> QueryAsync<T>(string sql, long job)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        return await conn.QueryAsync<T>(sql, new { job });
    }
}
