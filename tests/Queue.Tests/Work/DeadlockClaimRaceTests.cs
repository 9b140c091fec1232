using System.Collections.Concurrent;
using System.Net;
using System.Net.Http.Json;
using Dapper;
using MySqlConnector;

namespace Queue.Tests.Work;

/// <summary>
/// Required reliability test 4: 50 workers claim and complete 1,000 items while another connection keeps provoking
/// deadlocks with their completions (it locks the job rows, then items, the opposite order of a completion). Nothing is
/// claimed twice, nothing is missed, and no worker ever sees an error: the deadlocks are retried inside the service.
/// </summary>
public sealed class DeadlockClaimRaceTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task Fifty_workers_claim_and_complete_1000_items_exactly_once_while_deadlocks_are_provoked_and_never_see_one()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var jobs = new List<long>();
        for (var j = 0; j < 4; j++)
        {
            jobs.Add(await fx.NewJobAsync(tenant.Id, 250, ["deadlock"]));
        }
        var deadlocksBefore = await DeadlocksAsync();
        using var stop = new CancellationTokenSource();
        var provoked = ProvokeAsync(jobs, stop.Token);
        var claimed = new ConcurrentBag<long>();
        var errors = new ConcurrentBag<string>();
        var workers = Enumerable.Range(0, 50).Select(async w =>
        {
            using var http = fx.Worker();
            for (var empty = 0; empty < 3;)
            {
                using var r = await http.PostAsJsonAsync("/next", new { worker = $"w{w}", tasks = new[] { "deadlock" }, max = 1 + (w % 4) });
                if (r.StatusCode == HttpStatusCode.NoContent)
                {
                    empty++;
                    continue;
                }
                if (r.StatusCode != HttpStatusCode.OK)
                {
                    errors.Add($"/next {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
                    continue;
                }
                foreach (var item in (await r.Content.ReadFromJsonAsync<System.Text.Json.JsonElement>()).GetProperty("items").EnumerateArray())
                {
                    claimed.Add(item.GetProperty("id").GetInt64());
                    using var done = await WorkFixture.FinishAsync(http, item, "complete");
                    if (done.StatusCode != HttpStatusCode.NoContent)
                    {
                        errors.Add($"complete {(int)done.StatusCode}: {await done.Content.ReadAsStringAsync()}");
                    }
                }
            }
        }).ToList();
        await Task.WhenAll(workers);
        await stop.CancelAsync();
        var provocations = await provoked;

        Assert.True(errors.IsEmpty, string.Join("\n", errors));
        Assert.Equal(1000, claimed.Count);
        Assert.Equal(1000, claimed.Distinct().Count());
        Assert.Equal(1000L, await fx.ScalarAsync<long>("SELECT COUNT(*) FROM items WHERE job_id IN @jobs AND state = 2 AND attempts = 1", new { jobs }));
        Assert.Equal(1000L, await fx.ScalarAsync<long>("SELECT SUM(items_done) FROM jobs WHERE id IN @jobs", new { jobs }));
        Assert.True(provocations > 0, "the provoker never held a job row while workers completed");
        Assert.True(await DeadlocksAsync() > deadlocksBefore, "no deadlock happened: the test provoked nothing");
    }

    /// <summary>Locks the job rows, then the leased items newest first, over and over; returns how often it held both kinds.</summary>
    private async Task<int> ProvokeAsync(List<long> jobs, CancellationToken ct)
    {
        var rounds = 0;
        await using var conn = await fx.DataSource.OpenConnectionAsync(CancellationToken.None);
        while (!ct.IsCancellationRequested)
        {
            try
            {
                await using var tx = await conn.BeginTransactionAsync(System.Data.IsolationLevel.ReadCommitted, CancellationToken.None);
                await conn.ExecuteAsync("SELECT id FROM jobs WHERE id IN @jobs ORDER BY id FOR UPDATE", new { jobs }, tx);
                await conn.ExecuteAsync("SELECT id FROM items WHERE job_id IN @jobs AND state = 1 ORDER BY id DESC LIMIT 8 FOR UPDATE", new { jobs }, tx);
                await Task.Delay(5, CancellationToken.None); // the scenario: hold both for a moment, as a slow transaction would
                await tx.RollbackAsync(CancellationToken.None);
                rounds++;
            }
            catch (MySqlException ex) when (ex.ErrorCode is MySqlErrorCode.LockDeadlock or MySqlErrorCode.LockWaitTimeout)
            {
                rounds++; // chosen as the victim: the worker's transaction went on
            }
        }
        return rounds;
    }

    private async Task<long> DeadlocksAsync()
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        return long.Parse((await conn.QuerySingleAsync<(string, string)>("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")).Item2, System.Globalization.CultureInfo.InvariantCulture);
    }
}
