using Dapper;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using Microsoft.Extensions.Time.Testing;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Ordering;

namespace Queue.Tests.Scheduler;

/// <summary>
/// The Core ordering services on a fake clock, plus the test data they work on: jobs with their counters, items and
/// lanes, written the way the submission code does (counters and lanes in one transaction, lanes via PlaceAsync).
/// </summary>
internal sealed class OrderingTestbed
{
    private OrderingTestbed(MySqlDataSource db, FakeTimeProvider clock, TimeSpan period, string zone, long rewriteMemoryBytes, int rewriteSliceJobs,
        string rewriteMethod, int rewriteFillJobs, ILogger<OrderingRewriter>? logger)
    {
        Db = db;
        Clock = clock;
        var options = Options.Create(new OrderingOptions
        {
            Period = period, TimeZone = zone, RewriteMemoryBytes = rewriteMemoryBytes, RewriteSliceJobs = rewriteSliceJobs,
            RewriteMethod = rewriteMethod, RewriteFillJobs = rewriteFillJobs,
        });
        Calendar = new OrderingCalendar(clock, options);
        Lanes = new OrderingLanes(Calendar, clock);
        Rewriter = new OrderingRewriter(db, Calendar, Lanes, clock, options, logger ?? NullLogger<OrderingRewriter>.Instance);
    }

    /// <summary>11:00 UTC on a Sunday: with hourly periods an oldest-first one, so a rewrite at it ranks by age.</summary>
    public static readonly DateTimeOffset OldestFirstHour = new(2026, 11, 22, 11, 0, 0, TimeSpan.Zero);

    public MySqlDataSource Db { get; }

    public FakeTimeProvider Clock { get; }

    public OrderingCalendar Calendar { get; }

    public OrderingLanes Lanes { get; }

    public OrderingRewriter Rewriter { get; }

    /// <summary>A testbed whose clock stands at <paramref name="start"/>.</summary>
    public static OrderingTestbed At(MySqlDataSource db, DateTimeOffset start, TimeSpan? period = null, string zone = "UTC",
        long? rewriteMemoryBytes = null, int? rewriteSliceJobs = null, string rewriteMethod = OrderingOptions.Swap, int? rewriteFillJobs = null,
        ILogger<OrderingRewriter>? logger = null) =>
        new(db, new FakeTimeProvider(start), period ?? TimeSpan.FromHours(1), zone, rewriteMemoryBytes ?? new OrderingOptions().RewriteMemoryBytes,
            rewriteSliceJobs ?? new OrderingOptions().RewriteSliceJobs, rewriteMethod, rewriteFillJobs ?? new OrderingOptions().RewriteFillJobs, logger);

    /// <summary>Moves the clock to <paramref name="offset"/> after the start of the next period of the given mode.</summary>
    public OrderingPeriod AdvanceTo(OrderingMode mode, TimeSpan? offset = null)
    {
        var p = Calendar.Current;
        do
        {
            Clock.SetUtcNow(p.End + (offset ?? TimeSpan.FromSeconds(1)));
            p = Calendar.Current;
        }
        while (p.Mode != mode);
        return p;
    }

    /// <summary>
    /// Creates a job with <paramref name="documents"/> documents, one item per task each; the first
    /// <paramref name="done"/>/<paramref name="dead"/>/<paramref name="cancelled"/> items are in those states.
    /// Lanes are placed for the tasks that still have active items, with the provisional value of the current mode.
    /// </summary>
    public async Task<long> NewJobAsync(long tenantId, int documents, string[]? tasks = null, int done = 0, int dead = 0, int cancelled = 0, int state = 1)
    {
        tasks ??= ["text"];
        var now = Clock.GetUtcNow().UtcDateTime;
        await using var conn = await Db.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var jobId = await conn.ExecuteScalarAsync<long>("""
            INSERT INTO jobs (tenant_id, name, state, tasks, created_at, updated_at) VALUES (@TenantId, 'job', @State, @Tasks, @Now, @Now);
            SELECT LAST_INSERT_ID();
            """, new { TenantId = tenantId, State = state, Tasks = string.Join(',', tasks), Now = now }, tx);
        var items = new List<(long Doc, string Task)>();
        for (var d = 0; d < documents; d++)
        {
            var docId = await conn.ExecuteScalarAsync<long>("""
                INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
                VALUES (@JobId, @TenantId, 'd.txt', 'text/plain', 1, UNHEX(SHA2('x', 256)), @Now);
                SELECT LAST_INSERT_ID();
                """, new { JobId = jobId, TenantId = tenantId, Now = now }, tx);
            await conn.ExecuteAsync("INSERT INTO document_content (document_id, content) VALUES (@DocId, 'x')", new { DocId = docId }, tx);
            items.AddRange(tasks.Select(t => (docId, t)));
        }
        for (var i = 0; i < items.Count; i++)
        {
            var itemState = i < done ? 2 : i < done + dead ? 3 : i < done + dead + cancelled ? 4 : 0;
            await conn.ExecuteAsync("""
                INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
                VALUES (@JobId, @DocId, @Task, @State, @Now, @Now, @Now)
                """, new { JobId = jobId, DocId = items[i].Doc, items[i].Task, State = itemState, Now = now }, tx);
        }
        await conn.ExecuteAsync("""
            UPDATE jobs SET documents = @Docs, items_total = @Total, items_done = @Done, items_dead = @Dead, items_cancelled = @Cancelled
            WHERE id = @JobId
            """, new { JobId = jobId, Docs = documents, Total = items.Count, Done = done, Dead = dead, Cancelled = cancelled }, tx);
        var activeTasks = (await conn.QueryAsync<string>("SELECT DISTINCT task FROM items WHERE job_id = @JobId AND active = 1", new { JobId = jobId }, tx)).AsList();
        if (activeTasks.Count > 0)
        {
            await Lanes.PlaceAsync(conn, tx, jobId, activeTasks, default);
        }
        await tx.CommitAsync();
        return jobId;
    }

    /// <summary>
    /// One more document for an open job, an item per task, and its lanes placed, as an upload does (counters and lanes
    /// in its transaction).
    /// </summary>
    public async Task UploadAsync(long jobId, string[]? tasks = null)
    {
        tasks ??= ["text"];
        var now = Clock.GetUtcNow().UtcDateTime;
        await using var conn = await Db.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var docId = await conn.ExecuteScalarAsync<long>("""
            INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
            SELECT id, tenant_id, 'd.txt', 'text/plain', 1, UNHEX(SHA2('x', 256)), @Now FROM jobs WHERE id = @JobId;
            SELECT LAST_INSERT_ID();
            """, new { JobId = jobId, Now = now }, tx);
        foreach (var task in tasks)
        {
            await conn.ExecuteAsync("""
                INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
                VALUES (@JobId, @DocId, @Task, 0, @Now, @Now, @Now)
                """, new { JobId = jobId, DocId = docId, Task = task, Now = now }, tx);
        }
        await conn.ExecuteAsync("UPDATE jobs SET documents = documents + 1, items_total = items_total + @N WHERE id = @JobId",
            new { JobId = jobId, N = tasks.Length }, tx);
        await Lanes.PlaceAsync(conn, tx, jobId, tasks, default);
        await tx.CommitAsync();
    }

    /// <summary>Marks <paramref name="count"/> active items of the job done, as a completion would (counters and items).</summary>
    public async Task CompleteAsync(long jobId, int count)
    {
        await using var conn = await Db.OpenConnectionAsync();
        var n = await conn.ExecuteAsync("UPDATE items SET state = 2 WHERE job_id = @JobId AND active = 1 ORDER BY id LIMIT @Count", new { JobId = jobId, Count = count });
        await conn.ExecuteAsync("UPDATE jobs SET items_done = items_done + @N WHERE id = @JobId", new { JobId = jobId, N = n });
    }

    public async Task<long> AddOverrideAsync(long jobId, long priority, DateTimeOffset expiresAt, bool apply = true)
    {
        var now = Clock.GetUtcNow().UtcDateTime;
        await using var conn = await Db.OpenConnectionAsync();
        await using var tx = await conn.BeginReadCommittedAsync(default);
        var id = await conn.ExecuteScalarAsync<long>("""
            INSERT INTO overrides (job_id, priority, active, reason, technician_id, expires_at, created_at, updated_at)
            VALUES (@JobId, @Priority, 1, 'urgent customer', 1, @ExpiresAt, @Now, @Now);
            SELECT LAST_INSERT_ID();
            """, new { JobId = jobId, Priority = priority, ExpiresAt = expiresAt.UtcDateTime, Now = now }, tx);
        if (apply)
        {
            await Lanes.ApplyOverrideAsync(conn, tx, jobId, priority, default);
        }
        await tx.CommitAsync();
        return id;
    }

    public async Task<List<Lane>> LanesAsync()
    {
        await using var conn = await Db.OpenConnectionAsync();
        return (await conn.QueryAsync<Lane>("SELECT job_id AS JobId, task AS Task, " + LaneValueSql.Shown + " AS Value, mode AS Mode FROM ordering ORDER BY job_id, task")).AsList();
    }

    /// <summary>The values as stored, band included (<see cref="OrderingBand"/>).</summary>
    public async Task<List<long>> StoredValuesAsync()
    {
        await using var conn = await Db.OpenConnectionAsync();
        return (await conn.QueryAsync<long>("SELECT value FROM ordering ORDER BY job_id, task")).AsList();
    }

    public async Task<Dictionary<long, (long Value, string Mode)>> ValuesByJobAsync()
    {
        var lanes = await LanesAsync();
        foreach (var g in lanes.GroupBy(l => l.JobId))
        {
            // Every lane of a job carries the job's value (docs/DESIGN.md).
            Assert.Single(g.Select(l => (l.Value, l.Mode)).Distinct());
        }
        return lanes.GroupBy(l => l.JobId).ToDictionary(g => g.Key, g => (g.First().Value, g.First().Mode));
    }

    /// <summary>
    /// Makes the swap's first copy wait <paramref name="hold"/> for the table lock a bulk load takes: another
    /// transaction's locking read of the empty ordering_next holds an intention lock on it; <paramref name="onHeld"/>
    /// runs once it does. Returns the wait for that transaction's end.
    /// </summary>
    public Func<Task> HoldTheSwapCopy(TimeSpan hold, Action? onHeld = null)
    {
        Task? held = null;
        Rewriter.AfterSwapStep = async step =>
        {
            if (step == SwapStep.Filled && held is null)
            {
                var locked = new TaskCompletionSource();
                held = Task.Run(async () =>
                {
                    await using var conn = await Db.OpenConnectionAsync();
                    await using var tx = await conn.BeginTransactionAsync();
                    await conn.ExecuteAsync("SELECT * FROM ordering_next LOCK IN SHARE MODE", transaction: tx);
                    locked.SetResult();
                    await Task.Delay(hold);
                    await tx.CommitAsync();
                });
                await locked.Task;
                onHeld?.Invoke();
            }
        };
        return () => held ?? throw new InvalidOperationException("The swap never reached its copy");
    }

    /// <summary>Many one-lane jobs in one statement each, for the tests that need volume.</summary>
    public async Task<int> BulkJobsAsync(long tenantId, int count, string task = "text")
    {
        var now = Clock.GetUtcNow().UtcDateTime;
        await using var conn = await Db.OpenConnectionAsync();
        await conn.ExecuteAsync("SET SESSION max_recursive_iterations = 100000000");
        await conn.ExecuteAsync("""
            INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, created_at, updated_at)
            WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < @Count)
            SELECT @TenantId, CONCAT('bulk-', n), 1, @Task, 1 + n % 7, 1 + n % 7, @Now, @Now FROM s
            """, new { TenantId = tenantId, Count = count, Task = task, Now = now }, commandTimeout: 300);
        return await conn.ExecuteAsync($"""
            INSERT INTO ordering (job_id, task, tenant_id, value, mode, blocked, available_at, updated_at)
            SELECT id, @Task, tenant_id, items_total + {LaneValueSql.BandBase}, 'smallest', 0, @Now, @Now FROM jobs
            WHERE tenant_id = @TenantId AND name LIKE 'bulk-%'
            """, new { TenantId = tenantId, Task = task, Now = now }, commandTimeout: 300);
    }

    /// <summary>A swap that renamed or gave up leaves none of its triggers on ordering and none of its work tables.</summary>
    public static async Task AssertSwapLeftNothingAsync(MySqlConnection conn)
    {
        Assert.Equal(0L, await conn.ExecuteScalarAsync<long>("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()"));
        Assert.Equal(0L, await conn.ExecuteScalarAsync<long>(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('ordering_next', 'ordering_retired')"));
    }
}
