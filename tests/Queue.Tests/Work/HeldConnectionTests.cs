using System.Net;
using Dapper;
using Queue.Core.Data;
using Queue.Tests.Infrastructure;
using Queue.Tests.Scheduler;

namespace Queue.Tests.Work;

/// <summary>
/// The connection held between completion transactions and between epoch reads (docs/DESIGN.md "Claim and completion
/// round trips"): kept only after a clean use, so no transaction or failure outlives the use that made it.
/// </summary>
public sealed class HeldConnectionTests
{
    [Fact]
    public async Task A_use_that_keeps_its_connection_hands_the_same_session_to_the_next_use()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var held = new HeldConnection(db.DataSource);

        long first;
        await using (var use = await held.OpenAsync(default))
        {
            first = await use.Connection.ExecuteScalarAsync<long>("SELECT CONNECTION_ID()");
            use.Keep();
        }
        await using (var use = await held.OpenAsync(default))
        {
            Assert.Equal(first, await use.Connection.ExecuteScalarAsync<long>("SELECT CONNECTION_ID()"));
        }
    }

    [Fact]
    public async Task A_use_left_inside_a_transaction_is_not_kept_and_the_next_use_starts_outside_any()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var held = new HeldConnection(db.DataSource);

        await using (var use = await held.OpenAsync(default))
        {
            await use.Connection.ExecuteAsync("START TRANSACTION");
            await use.Connection.ExecuteAsync("UPDATE claim_epoch SET epoch = epoch + 1 WHERE id = 1");
            // No Keep: the use failed halfway, as a completion that threw would.
        }
        await using (var use = await held.OpenAsync(default))
        {
            Assert.Equal(0, await use.Connection.ExecuteScalarAsync<int>("SELECT @@in_transaction"));
        }
        // The row lock went with the reset connection: another session can write the row at once.
        await using var other = await db.DataSource.OpenConnectionAsync();
        await other.ExecuteAsync("SET SESSION innodb_lock_wait_timeout = 2");
        Assert.Equal(1, await other.ExecuteAsync("UPDATE claim_epoch SET epoch = epoch + 1 WHERE id = 1"));
    }

    [Fact]
    public async Task A_second_use_while_the_first_runs_gets_a_connection_of_its_own()
    {
        await using var db = await FreshDatabase.CreateAsync();
        await using var held = new HeldConnection(db.DataSource);

        await using var a = await held.OpenAsync(default);
        await using var b = await held.OpenAsync(default);

        Assert.NotEqual(await a.Connection.ExecuteScalarAsync<long>("SELECT CONNECTION_ID()"),
            await b.Connection.ExecuteScalarAsync<long>("SELECT CONNECTION_ID()"));
    }
}

/// <summary>A completion whose held connection the server killed is still written, and answered 204.</summary>
public sealed class CompletionOverKilledConnectionTests(DirectClaimFixture fx) : IClassFixture<DirectClaimFixture>
{
    [Fact]
    public async Task A_completion_after_the_server_killed_every_session_of_the_api_answers_204_and_counts_once()
    {
        var (tenant, _) = await fx.NewCustomerAsync();
        var job = await fx.NewJobAsync(tenant.Id, 2, ["killed"]);
        using var http = fx.Worker();
        var first = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "killed" } });
        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, first, "complete")).StatusCode);
        var second = await WorkFixture.ClaimOneAsync(http, new { tasks = new[] { "killed" } });

        Assert.NotEqual(0, await ServerSessions.KillAllAsync(fx.DataSource));

        Assert.Equal(HttpStatusCode.NoContent, (await WorkFixture.FinishAsync(http, second, "complete")).StatusCode);
        Assert.Equal(2L, await fx.ScalarAsync<long>("SELECT items_done FROM jobs WHERE id = @Id", new { Id = job }));
    }
}
