using Dapper;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Queue.Local;
using Queue.Core.Admin;
using Queue.Core.Claims;
using Queue.Core.Jobs;
using Queue.Core.Maintenance;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Scheduler;

[TakesAbout(17)]
public sealed class MaintenanceTests
{
    private static readonly DateTimeOffset Now = new(2026, 11, 22, 10, 0, 30, TimeSpan.Zero);

    [Fact]
    public async Task Retention_deletes_the_items_errors_and_documents_of_jobs_finished_longer_ago_than_the_retention_only()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, Now.AddDays(-40));
        var tenant = await db.NewTenantAsync();
        var old = await bed.NewJobAsync(tenant, 30, ["text", "thumbnail"], done: 60);
        var oldCancelled = await bed.NewJobAsync(tenant, 3, cancelled: 3);
        var recent = await bed.NewJobAsync(tenant, 4, done: 4);
        var running = await bed.NewJobAsync(tenant, 5, done: 2);
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("UPDATE jobs SET state = 2, finished_at = @At WHERE id = @Id", new { Id = old, At = Now.AddDays(-31).UtcDateTime });
            await conn.ExecuteAsync("UPDATE jobs SET state = 3, finished_at = @At WHERE id = @Id", new { Id = oldCancelled, At = Now.AddDays(-35).UtcDateTime });
            await conn.ExecuteAsync("UPDATE jobs SET state = 2, finished_at = @At WHERE id = @Id", new { Id = recent, At = Now.AddDays(-29).UtcDateTime });
            await conn.ExecuteAsync("""
                INSERT INTO item_errors (item_id, attempt, error, at) SELECT id, 1, 'boom', @At FROM items WHERE job_id IN (@Old, @Recent)
                """, new { Old = old, Recent = recent, At = Now.AddDays(-32).UtcDateTime });
            await conn.ExecuteAsync("INSERT INTO snapshots (at, tenant_id, ready, leased, done, dead, cancelled, claims, completions) VALUES (@A, @T, 0,0,0,0,0,0,0), (@B, @T, 0,0,0,0,0,0,0)",
                new { A = Now.AddDays(-31).UtcDateTime, B = Now.AddDays(-1).UtcDateTime, T = tenant });
        }
        bed.Clock.SetUtcNow(Now);
        // Tiny batches, so the purge of one job takes many transactions.
        var retention = new RetentionService(db.DataSource, bed.Clock,
            Options.Create(new MaintenanceOptions { RetentionItemBatch = 7, RetentionDocumentBatch = 4, RetentionPause = TimeSpan.Zero }),
            NullLogger<RetentionService>.Instance);

        var result = await retention.RunAsync(default);

        Assert.Equal(new RetentionResult(2, 63, 33, 1), result);
        await using var check = await db.DataSource.OpenConnectionAsync();
        async Task<(int Items, int Documents, int Content, int Errors)> RowsAsync(long job) => (
            await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM items WHERE job_id = @J", new { J = job }),
            await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM documents WHERE job_id = @J", new { J = job }),
            await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM document_content c JOIN documents d ON d.id = c.document_id WHERE d.job_id = @J", new { J = job }),
            await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM item_errors e JOIN items i ON i.id = e.item_id WHERE i.job_id = @J", new { J = job }));
        Assert.Equal((0, 0, 0, 0), await RowsAsync(old));
        Assert.Equal((0, 0, 0, 0), await RowsAsync(oldCancelled));
        Assert.Equal((4, 4, 4, 4), await RowsAsync(recent));
        Assert.Equal((5, 5, 5, 0), await RowsAsync(running));
        Assert.Equal(0, await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM item_errors e LEFT JOIN items i ON i.id = e.item_id WHERE i.id IS NULL"));
        Assert.Equal(0, await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM document_content c LEFT JOIN documents d ON d.id = c.document_id WHERE d.id IS NULL"));
        // The job rows stay, with their counters, so their status can still be read.
        Assert.Equal(60, await check.ExecuteScalarAsync<int>("SELECT items_done FROM jobs WHERE id = @J", new { J = old }));
        Assert.Equal(1, await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM snapshots"));

        // A second run finds nothing new (its cursor is past the purged jobs).
        Assert.Equal(new RetentionResult(0, 0, 0, 0), await retention.RunAsync(default));
    }

    [Fact]
    public async Task A_job_requeued_between_two_purge_batches_stops_the_purge_and_keeps_its_remaining_items_and_every_document()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, Now.AddDays(-40));
        var tenant = await db.NewTenantAsync();
        var job = await bed.NewJobAsync(tenant, 30, ["text"], done: 30);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        await conn.ExecuteAsync("UPDATE jobs SET state = 2, finished_at = @At WHERE id = @Id", new { Id = job, At = Now.AddDays(-31).UtcDateTime });
        bed.Clock.SetUtcNow(Now);
        // Batches of 5 items with a pause between them: time to requeue after the first.
        var retention = new RetentionService(db.DataSource, bed.Clock,
            Options.Create(new MaintenanceOptions { RetentionItemBatch = 5, RetentionDocumentBatch = 5, RetentionPause = TimeSpan.FromSeconds(1) }),
            NullLogger<RetentionService>.Instance);

        var run = retention.RunAsync(default);
        await Eventually.HoldsAsync(async () => await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM items WHERE job_id = @Id", new { Id = job }) != 30,
            TimeSpan.FromSeconds(2), TimeSpan.FromMilliseconds(10));
        // What an Admin requeue does to the job row, under the same row lock: the job is active again.
        await using (var tx = await conn.BeginTransactionAsync())
        {
            await conn.ExecuteAsync("SELECT id FROM jobs WHERE id = @Id FOR UPDATE", new { Id = job }, tx);
            await conn.ExecuteAsync("UPDATE items SET state = 0 WHERE job_id = @Id", new { Id = job }, tx);
            await conn.ExecuteAsync("UPDATE jobs SET state = 1, finished_at = NULL, items_done = 0 WHERE id = @Id", new { Id = job }, tx);
            await tx.CommitAsync();
        }
        var result = await run;

        Assert.Equal(0, result.Jobs);
        Assert.Equal(25, await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM items WHERE job_id = @Id", new { Id = job }));
        Assert.Equal(30, await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM documents WHERE job_id = @Id", new { Id = job }));
        Assert.Equal(0, await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM items i LEFT JOIN documents d ON d.id = i.document_id WHERE i.job_id = @Id AND d.id IS NULL", new { Id = job }));
    }

    [Fact]
    public async Task Expired_leases_of_a_cancelled_job_become_cancelled_and_live_ones_are_left_to_finish()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, Now);
        var tenant = await db.NewTenantAsync();
        var job = await bed.NewJobAsync(tenant, 4, ["text"], cancelled: 2);
        var other = await bed.NewJobAsync(tenant, 2, ["text"]);
        await using var conn = await db.DataSource.OpenConnectionAsync();
        var ids = (await conn.QueryAsync<long>("SELECT id FROM items WHERE job_id = @job AND state = 0 ORDER BY id", new { job })).ToList();
        await conn.ExecuteAsync("UPDATE jobs SET state = 3 WHERE id = @job", new { job });
        await conn.ExecuteAsync("UPDATE items SET state = 1, lease_token = UNHEX(REPEAT('ab', 16)), due_at = @Past WHERE id = @Id", new { Id = ids[0], Past = Now.AddMinutes(-1).UtcDateTime });
        await conn.ExecuteAsync("UPDATE items SET state = 1, lease_token = UNHEX(REPEAT('cd', 16)), due_at = @Later WHERE id = @Id", new { Id = ids[1], Later = Now.AddMinutes(5).UtcDateTime });
        await conn.ExecuteAsync("UPDATE items SET state = 1, lease_token = UNHEX(REPEAT('ef', 16)), due_at = @Past WHERE job_id = @other", new { other, Past = Now.AddMinutes(-1).UtcDateTime });

        var settled = await new CancelledLeaseSweep(db.DataSource, bed.Clock).RunAsync(default);

        Assert.Equal(1, settled);
        Assert.Equal(4, await conn.ExecuteScalarAsync<int>("SELECT state FROM items WHERE id = @Id", new { Id = ids[0] }));
        Assert.Equal(1, await conn.ExecuteScalarAsync<int>("SELECT state FROM items WHERE id = @Id", new { Id = ids[1] }));
        Assert.Equal(3, await conn.ExecuteScalarAsync<int>("SELECT items_cancelled FROM jobs WHERE id = @job", new { job }));
        // Only cancelled jobs are touched: an open job's expired leases are reclaimed by claims, not cancelled.
        Assert.Equal(2, await conn.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM items WHERE job_id = @other AND state = 1", new { other }));
    }

    [Fact]
    public async Task Expired_idempotency_records_are_deleted_and_live_ones_kept()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var tenant = await db.NewTenantAsync();
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("""
                INSERT INTO idempotency (tenant_id, idem_key, method, path, request_hash, state, created_at, expires_at)
                WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 500)
                SELECT @T, CONCAT('k', n), 'POST', '/jobs', UNHEX(SHA2(n, 256)), 1, @Created,
                       IF(n <= 300, @Past, @Future) FROM s
                """, new { T = tenant, Created = Now.AddDays(-2).UtcDateTime, Past = Now.AddSeconds(-1).UtcDateTime, Future = Now.AddHours(1).UtcDateTime });
        }
        var cleanup = new IdempotencyCleanup(db.DataSource, new Microsoft.Extensions.Time.Testing.FakeTimeProvider(Now), NullLogger<IdempotencyCleanup>.Instance);

        Assert.Equal(300, await cleanup.RunAsync(default));

        await using var check = await db.DataSource.OpenConnectionAsync();
        Assert.Equal(200, await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM idempotency WHERE expires_at > @Now", new { Now = Now.UtcDateTime }));
        Assert.Equal(0, await check.ExecuteScalarAsync<int>("SELECT COUNT(*) FROM idempotency WHERE expires_at <= @Now", new { Now = Now.UtcDateTime }));
    }

    [Fact]
    public async Task A_minute_snapshot_records_each_tenants_depth_by_state_and_the_claims_and_completions_of_that_minute()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, Now);
        var acme = await db.NewTenantAsync();
        var globex = await db.NewTenantAsync();
        var idle = await db.NewTenantAsync();
        var job = await bed.NewJobAsync(acme, 10, done: 3, dead: 1, cancelled: 1);   // 5 active
        await bed.NewJobAsync(acme, 2);                                              // 2 active
        await bed.NewJobAsync(globex, 4, done: 4);
        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            // Two live leases and one expired one (which counts as ready).
            await conn.ExecuteAsync("UPDATE items SET state = 1, due_at = @Live WHERE job_id = @J AND state = 0 ORDER BY id LIMIT 2", new { J = job, Live = Now.AddMinutes(5).UtcDateTime });
            await conn.ExecuteAsync("UPDATE items SET state = 1, due_at = @Gone WHERE job_id = @J AND state = 0 ORDER BY id LIMIT 1", new { J = job, Gone = Now.AddMinutes(-5).UtcDateTime });
            await conn.ExecuteAsync("INSERT INTO tenant_counters (tenant_id, claims, completions, updated_at) VALUES (@A, 40, 30, @Now), (@G, 7, 7, @Now)",
                new { A = acme, G = globex, Now = Now.UtcDateTime });
        }
        var snapshots = new SnapshotService(db.DataSource, bed.Clock);

        Assert.True(await snapshots.TakeAsync(Now));
        Assert.False(await snapshots.TakeAsync(Now.AddSeconds(20))); // same minute: already taken

        await using (var conn = await db.DataSource.OpenConnectionAsync())
        {
            await conn.ExecuteAsync("UPDATE tenant_counters SET claims = claims + 12, completions = completions + 9 WHERE tenant_id = @A", new { A = acme });
        }
        bed.Clock.Advance(TimeSpan.FromMinutes(1));
        Assert.True(await snapshots.TakeAsync(bed.Clock.GetUtcNow()));

        await using var check = await db.DataSource.OpenConnectionAsync();
        var rows = (await check.QueryAsync<Snapshot>("""
            SELECT at AS At, tenant_id AS TenantId, ready AS Ready, leased AS Leased, done AS Done, dead AS Dead, cancelled AS Cancelled,
                   claims AS Claims, completions AS Completions
            FROM snapshots ORDER BY at, tenant_id
            """)).AsList();
        var minute = new DateTime(2026, 11, 22, 10, 0, 0, DateTimeKind.Utc);
        Assert.Equal(
            [
                new Snapshot(minute, acme, 5, 2, 3, 1, 1, 40, 30),
                new Snapshot(minute, globex, 0, 0, 4, 0, 0, 7, 7),
                new Snapshot(minute, idle, 0, 0, 0, 0, 0, 0, 0),
                new Snapshot(minute.AddMinutes(1), acme, 5, 2, 3, 1, 1, 12, 9),
                new Snapshot(minute.AddMinutes(1), globex, 0, 0, 4, 0, 0, 0, 0),
                new Snapshot(minute.AddMinutes(1), idle, 0, 0, 0, 0, 0, 0, 0),
            ],
            rows);
    }

    [Fact]
    public async Task The_Api_metrics_show_the_rewrite_count_of_the_database()
    {
        await using var db = await FreshDatabase.CreateAsync();
        var bed = OrderingTestbed.At(db.DataSource, Now);
        for (var i = 0; i < 3; i++)
        {
            await bed.Rewriter.RewriteAsync("test");
            bed.Clock.Advance(TimeSpan.FromHours(1));
        }
        await using var api = ServiceProcess.Start("Queue.Api", db.ConnectionString);
        await api.WaitHealthyAsync("/readyz");
        using var http = new HttpClient();

        var metrics = await http.GetStringAsync(new Uri(api.Url + "/metrics"));
        Assert.Contains("\nqueue_ordering_rewrites_total 3\n", metrics, StringComparison.Ordinal);

        await bed.Rewriter.RewriteAsync("test");
        await Eventually.HoldsAsync(async () =>
        {
            metrics = await http.GetStringAsync(new Uri(api.Url + "/metrics"));
            return metrics.Contains("\nqueue_ordering_rewrites_total 4\n", StringComparison.Ordinal);
        }, TimeSpan.FromSeconds(20), TimeSpan.FromMilliseconds(500));
        Assert.Contains("\nqueue_ordering_rewrites_total 4\n", metrics, StringComparison.Ordinal);
    }

    private sealed record Snapshot(DateTime At, long TenantId, long Ready, long Leased, long Done, long Dead, long Cancelled, long Claims, long Completions);
}
