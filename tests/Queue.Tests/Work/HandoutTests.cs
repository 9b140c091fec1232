using System.Net;
using System.Text.Json;
using Dapper;
using Queue.Core.Claims;

namespace Queue.Tests.Work;

/// <summary>/next answered from the claim-ahead buffer with no transaction, its lease written down after the answer.</summary>
public sealed class HandoutTests(HandoutFixture fx) : IClassFixture<HandoutFixture>
{
    [Fact]
    public async Task A_lease_served_from_memory_is_a_reservation_in_its_row_until_it_is_written_down_with_the_workers_name_expiry_and_attempt()
    {
        var (item, task) = await ServedFromMemoryAsync("written", lease: 120);
        var id = item.GetProperty("id").GetInt64();

        var before = await RowAsync(id);
        Assert.Null(before.LeaseExpiresAt);
        Assert.Equal(0, before.Attempts);
        Assert.Equal(1, item.GetProperty("attempt").GetInt32());

        var expires = fx.Now.AddSeconds(120);
        fx.Clock.Advance(TimeSpan.FromMilliseconds(HandoutFixture.FlushMilliseconds));
        Assert.True(await Eventually.HoldsAsync(async () => (await RowAsync(id)).LeaseExpiresAt is not null, TimeSpan.FromSeconds(10)));
        var after = await RowAsync(id);
        Assert.Equal(1, after.State);
        Assert.Equal(1, after.Attempts);
        Assert.Equal($"{task}-worker", after.Worker);
        Assert.Equal(expires, after.LeaseExpiresAt!.Value, TimeSpan.FromSeconds(1));
        Assert.Equal(after.LeaseExpiresAt.Value, after.DueAt);
        Assert.Equal(after.LeaseExpiresAt.Value, item.GetProperty("leaseExpiresAt").GetDateTime().ToUniversalTime(), TimeSpan.FromMilliseconds(1));
    }

    [Fact]
    public async Task A_lease_served_from_memory_and_completed_before_its_write_counts_one_attempt_and_stays_done()
    {
        var (item, _) = await ServedFromMemoryAsync("completed", lease: 60);
        var id = item.GetProperty("id").GetInt64();
        using var worker = fx.Worker();

        using (var r = await WorkFixture.FinishAsync(worker, item, "complete"))
        {
            Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        }

        // The log reads the fake clock: past its flush time, then until its loop has written whatever it still held.
        fx.Clock.Advance(TimeSpan.FromMilliseconds(2 * HandoutFixture.FlushMilliseconds));
        await Eventually.UntilAsync(() => fx.Service<HandoutLog>().Idle, "the handout log has nothing left to write", 30);
        var row = await RowAsync(id);
        Assert.Equal(2, row.State);
        Assert.Equal(1, row.Attempts);
        Assert.Null(row.LeaseExpiresAt);
        // The same complete again (its 204 lost) is confirmed and changes nothing (RepeatedCompletionTests).
        using var again = await WorkFixture.FinishAsync(worker, item, "complete");
        Assert.Equal(HttpStatusCode.NoContent, again.StatusCode);
        Assert.Equal(1, (await RowAsync(id)).Attempts);
    }

    [Fact]
    public async Task A_lease_served_from_memory_and_failed_before_its_write_records_attempt_one_and_is_retried_later()
    {
        var (item, _) = await ServedFromMemoryAsync("failed", lease: 60);
        var id = item.GetProperty("id").GetInt64();
        using var worker = fx.Worker();

        using (var r = await WorkFixture.FinishAsync(worker, item, "fail",
            new { leaseToken = item.GetProperty("leaseToken").GetString(), error = "boom", retry = true }))
        {
            Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
        }

        var failedAt = fx.Now;
        // The log reads the fake clock: past its flush time, then until its loop has written whatever it still held.
        fx.Clock.Advance(TimeSpan.FromMilliseconds(2 * HandoutFixture.FlushMilliseconds));
        await Eventually.UntilAsync(() => fx.Service<HandoutLog>().Idle, "the handout log has nothing left to write", 30);
        var row = await RowAsync(id);
        Assert.Equal(0, row.State);
        Assert.Equal(1, row.Attempts);
        Assert.True(row.DueAt > failedAt);
        Assert.Equal(1, await fx.ScalarAsync<int>("SELECT attempt FROM item_errors WHERE item_id = @Id", new { Id = id }));
    }

    [Fact]
    public async Task Work_that_commits_after_a_claim_began_but_before_it_read_the_lanes_does_not_send_the_next_caller_to_another_transaction()
    {
        var (flood, _) = await fx.NewCustomerAsync();
        var (small, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(flood.Id, 200, ["trust-round"]);
        var dispatcher = fx.Service<ClaimDispatcher>();
        var signal = fx.Service<Queue.Core.WorkSignal>();
        var request = new ClaimRequest("trust", ["trust-round"], 1, 300);
        Assert.Single(await dispatcher.ClaimAsync(request, default));
        Assert.True(dispatcher.BufferedFor(request) > 0, "the flood's items are claimed ahead");
        var transactions = 0;
        // Past the flush's start, which read the signal, and before its first round reads the lanes: a submission
        // commits and signals.
        dispatcher.BeforeTransaction = async callers =>
        {
            if (callers > 0 && Interlocked.Increment(ref transactions) == 1)
            {
                await fx.NewJobAsync(small.Id, 3, ["trust-round"]);
                signal.Notify();
            }
        };
        try
        {
            signal.Notify();
            Assert.Single(await dispatcher.ClaimAsync(request, default));
            Assert.Equal(1, transactions);

            Assert.Single(await dispatcher.ClaimAsync(request, default));

            Assert.Equal(1, transactions);
        }
        finally
        {
            dispatcher.BeforeTransaction = null;
        }
    }

    /// <summary>
    /// A job of its own task, two /next calls that teach the process the demand and fill the buffer, then a third that
    /// the buffer serves; checks that the third answer came from memory (its row is still a reservation).
    /// </summary>
    private async Task<(JsonElement Item, string Task)> ServedFromMemoryAsync(string task, int lease)
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        await fx.NewJobAsync(tenant.Id, 10, [task]);
        using var worker = fx.Worker();
        var body = new { worker = $"{task}-worker", tasks = new[] { task }, max = 1, lease };
        Assert.Single(await WorkFixture.ClaimAsync(worker, body));
        Assert.Single(await WorkFixture.ClaimAsync(worker, body));
        var item = Assert.Single(await WorkFixture.ClaimAsync(worker, body));
        Assert.Null((await RowAsync(item.GetProperty("id").GetInt64())).LeaseExpiresAt);
        return (item, task);
    }

    private async Task<Row> RowAsync(long id)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        return await conn.QuerySingleAsync<Row>(
            "SELECT state AS State, attempts AS Attempts, worker AS Worker, lease_expires_at AS LeaseExpiresAt, due_at AS DueAt FROM items WHERE id = @Id",
            new { Id = id });
    }

    private sealed record Row(sbyte State, int Attempts, string? Worker, DateTime? LeaseExpiresAt, DateTime DueAt);
}
