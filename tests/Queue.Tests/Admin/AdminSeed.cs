using System.Security.Cryptography;
using Dapper;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Admin;

/// <summary>
/// Jobs for the Admin tests (<see cref="JobSeed"/>), and what the claim engine would later do to them.
/// </summary>
public sealed class AdminSeed(MySqlDataSource db, TimeProvider? clock = null)
{
    private readonly TimeProvider clock = clock ?? TimeProvider.System;

    public OrderingLanes Lanes => new(new OrderingCalendar(clock, Options.Create(new OrderingOptions())), clock);

    /// <summary>A closed job of <paramref name="documents"/> documents, each one item per task, all ready now.</summary>
    public Task<long> JobAsync(long tenantId, string name, int documents, params string[] tasks) =>
        JobSeed.InsertAsync(db, clock, tenantId, name, documents, tasks.Length == 0 ? ["text"] : tasks, closed: true,
            static (jobId, d) => ($"doc-{d}.txt", System.Text.Encoding.UTF8.GetBytes($"document {d} of job {jobId}")));

    /// <summary>Kills <paramref name="count"/> ready items of a job with an error history, as the claim engine would.</summary>
    public async Task KillItemsAsync(long jobId, int count, string error)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var ids = (await conn.QueryAsync<long>("SELECT id FROM items WHERE job_id = @JobId AND state = 0 ORDER BY id LIMIT @Count",
            new { JobId = jobId, Count = count }, tx)).AsList();
        foreach (var id in ids)
        {
            for (var attempt = 1; attempt <= 2; attempt++)
            {
                await conn.ExecuteAsync("INSERT INTO item_errors (item_id, attempt, error, at) VALUES (@Id, @Attempt, @Error, @Now)",
                    new { Id = id, Attempt = attempt, Error = $"{error} (attempt {attempt})", Now = now }, tx);
            }
            await conn.ExecuteAsync("UPDATE items SET state = 3, attempts = 2, last_error = @Error, updated_at = @Now WHERE id = @Id",
                new { Id = id, Error = $"{error} (attempt 2)", Now = now }, tx);
        }
        await conn.ExecuteAsync("UPDATE jobs SET items_dead = items_dead + @Count WHERE id = @JobId", new { JobId = jobId, Count = ids.Count }, tx);
        await tx.CommitAsync();
    }

    /// <summary>Completes every remaining ready item, so that the job is done (closed, nothing active) and leaves the ordering.</summary>
    public async Task FinishAsync(long jobId)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var done = await conn.ExecuteAsync("UPDATE items SET state = 2, updated_at = @Now WHERE job_id = @JobId AND state IN (0, 1)", new { JobId = jobId, Now = now }, tx);
        await conn.ExecuteAsync("UPDATE jobs SET items_done = items_done + @Done, state = 2, finished_at = @Now WHERE id = @JobId", new { JobId = jobId, Done = done, Now = now }, tx);
        await OrderingLanes.RemoveJobAsync(conn, tx, jobId, default);
        await tx.CommitAsync();
    }

    /// <summary>Leases <paramref name="count"/> ready items of a job to <paramref name="worker"/>, as a claim would.</summary>
    public async Task LeaseAsync(long jobId, int count, string worker, TimeSpan lease)
    {
        var now = clock.GetUtcNow().UtcDateTime;
        await using var conn = await db.OpenConnectionAsync();
        await conn.ExecuteAsync("""
            UPDATE items SET state = 1, attempts = attempts + 1, lease_token = @Token, lease_expires_at = @Until, due_at = @Until,
                   worker = @Worker, updated_at = @Now
            WHERE job_id = @JobId AND state = 0 ORDER BY id LIMIT @Count
            """, new { JobId = jobId, Count = count, Worker = worker, Token = RandomNumberGenerator.GetBytes(16), Until = now + lease, Now = now });
    }

    public async Task<int> ExecuteAsync(string sql, object? args = null)
    {
        await using var conn = await db.OpenConnectionAsync();
        return await conn.ExecuteAsync(sql, args);
    }

    public async Task<T> ScalarAsync<T>(string sql, object? args = null)
    {
        await using var conn = await db.OpenConnectionAsync();
        return (await conn.ExecuteScalarAsync<T>(sql, args))!;
    }

    public async Task<IReadOnlyList<T>> QueryAsync<T>(string sql, object? args = null)
    {
        await using var conn = await db.OpenConnectionAsync();
        return (await conn.QueryAsync<T>(sql, args)).AsList();
    }
}
