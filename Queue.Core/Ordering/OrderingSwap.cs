using System.Diagnostics;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>
/// The steps of the swap rewrite (<see cref="RewriteSwapSql"/>, docs/DESIGN.md "The swap rewrite") on the rewrite's
/// own connection, which holds rewrite_values. Every DDL step on ordering first looks for an instant when nobody holds
/// ordering, without waiting (claims queue behind a waiting DDL statement), then waits at most a second at a time.
/// </summary>
internal static class OrderingSwap
{
    /// <summary>
    /// How long a rewrite waits for another swap to rename or give up: a swap whose 'rewrite' lock died with its
    /// connection goes on to its end (about 12 s at 1M jobs, 23 s under claims), and nothing else holds the fence for
    /// long. Past it the rewrite fails, logged, and the ordering stands until the next try.
    /// </summary>
    private const int FenceWaitSeconds = 120;

    /// <summary>
    /// Takes the swap's fence on the connection that will build and rename: a named lock, which DDL does not release
    /// and which ends with the connection, so only a live swap holds it and a dead one can rename nothing.
    /// </summary>
    public static async Task LockAsync(MySqlConnection conn, CancellationToken ct)
    {
        if (!await TryLockAsync(conn, FenceWaitSeconds, ct))
        {
            throw new TimeoutException($"Another swap rewrite held the ordering's swap fence for {FenceWaitSeconds} s");
        }
    }

    private static async Task<bool> TryLockAsync(MySqlConnection conn, int seconds, CancellationToken ct) =>
        await conn.ExecuteScalarAsync<long?>(new CommandDefinition(RewriteSwapSql.TakeFence, new { Seconds = seconds }, cancellationToken: ct)) == 1;

    /// <summary>Gives the fence back; a broken connection has lost it already, with its session.</summary>
    public static async Task UnlockAsync(MySqlConnection conn)
    {
        try
        {
            await conn.ExecuteAsync(Cmd(RewriteSwapSql.ReleaseFence, CancellationToken.None));
        }
        catch (Exception e) when (e is MySqlException or InvalidOperationException)
        {
            // The session, and the lock with it, is gone.
        }
    }

    /// <summary>
    /// The amount an oldest-first provisional value placed while a rewrite into oldest-first builds is moved by: 5 per
    /// job the rewrite ranked. Placement reads the old ordering, which has no oldest-first lane in a rewrite from
    /// smallest-first, so such values start again at 10000, the oldest job's rank; moved by this much they go on from
    /// the last rank, in the order they were placed. Zero for a rewrite into smallest-first, whose values are counts.
    /// </summary>
    public static long OldestShift(string mode, int ranked) => mode == "oldest" ? 5L * ranked : 0;

    /// <summary>Removes what a rewrite stopped half-way left, and starts the notes and an empty ordering_next.</summary>
    public static async Task PrepareAsync(MySqlConnection conn, CancellationToken ct)
    {
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.BoundMetadataWait, ct));
        await CleanUpAsync(conn, await TriggersLeftAsync(conn, ct), ct);
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.CreateNext, ct));
        await TriggersAsync(conn, RewriteSwapSql.NoteTriggers, ct);
    }

    /// <summary>
    /// For the override sweep, which holds the 'rewrite' lock: the triggers of a swap whose process died, which would
    /// otherwise cost every lane write a second row write until the next rewrite.
    /// </summary>
    /// <remarks>
    /// Only with the swap's fence, not waiting for it: a swap that holds it is alive, and may have lost its 'rewrite'
    /// lock (so this sweep could take it); its triggers and table are its own until it renames or gives up.
    /// </remarks>
    public static async Task RemoveLeftoversAsync(MySqlDataSource db, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        if (!await TryLockAsync(conn, 0, ct))
        {
            return;
        }
        try
        {
            if (await TriggersLeftAsync(conn, ct))
            {
                await conn.ExecuteAsync(Cmd(RewriteSwapSql.BoundMetadataWait, ct));
                await CleanUpAsync(conn, triggersLeft: true, ct);
            }
        }
        finally
        {
            await UnlockAsync(conn);
        }
    }

    /// <summary>
    /// A failed swap's triggers and half-built table removed, on its own connection, which holds the fence; if that
    /// connection broke, its fence went with it and another connection takes it, unless someone else holds it by then
    /// (another swap, whose tables these now are). False when nothing could be removed.
    /// </summary>
    public static async Task<bool> AbandonAsync(MySqlConnection conn, MySqlDataSource db)
    {
        try
        {
            await CleanUpAsync(conn, await TriggersLeftAsync(conn, CancellationToken.None), CancellationToken.None);
            return true;
        }
        catch (Exception e) when (e is MySqlException or InvalidOperationException)
        {
            if (conn.State == System.Data.ConnectionState.Open && await AliveAsync(conn))
            {
                return false;
            }
        }
        await using var other = await db.OpenConnectionAsync();
        if (!await TryLockAsync(other, 1, CancellationToken.None))
        {
            return false;
        }
        try
        {
            await other.ExecuteAsync(Cmd(RewriteSwapSql.BoundMetadataWait, CancellationToken.None));
            await CleanUpAsync(other, await TriggersLeftAsync(other, CancellationToken.None), CancellationToken.None);
            return true;
        }
        finally
        {
            await UnlockAsync(other);
        }
    }

    private static async Task<bool> AliveAsync(MySqlConnection conn)
    {
        try
        {
            return await conn.PingAsync();
        }
        catch (Exception e) when (e is MySqlException or InvalidOperationException)
        {
            return false;
        }
    }

    private static async Task<bool> TriggersLeftAsync(MySqlConnection conn, CancellationToken ct) =>
        await conn.ExecuteScalarAsync<long>(Cmd(RewriteSwapSql.LeftTriggers, ct)) > 0;

    /// <summary>
    /// Triggers first: a trigger whose table is gone would fail every write of ordering. Dropped only when there are
    /// any, since the table lock waits for every transaction on ordering.
    /// </summary>
    private static async Task CleanUpAsync(MySqlConnection conn, bool triggersLeft, CancellationToken ct)
    {
        if (triggersLeft)
        {
            await TriggersAsync(conn, RewriteSwapSql.DropTriggers, ct);
        }
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.DropWorkTables, ct));
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.ForgetTouched, ct));
    }

    /// <summary>
    /// Copies every lane in bulk; returns the lanes written and the new table's rows as its statistics, taken right
    /// after the commit, estimate them (<see cref="RewriteSwapSql.AnalyzedRowsNext"/>).
    /// </summary>
    public static async Task<(int Copied, long? Analyzed)> CopyAsync(MySqlConnection conn, long bandBase, long oldestShift, DateTime now, CancellationToken ct)
    {
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.BulkLoadOn, ct));
        try
        {
            await using var tx = await conn.BeginReadCommittedAsync(ct);
            // Above all here without the command timeout: its KILL QUERY can leave the table empty behind an OK
            // (RewriteSwapSql.CopyAll). A cancelled token kills it the same way, so a cancelled copy is never committed.
            var copied = await conn.ExecuteAsync(WholeQueueCommand.Of(RewriteSwapSql.CopyAll, new { BandBase = bandBase, OldestShift = oldestShift, Now = now }, tx, ct));
            ct.ThrowIfCancellationRequested();
            await tx.CommitAsync(ct);
            await conn.ExecuteAsync(Cmd(RewriteSwapSql.AnalyzeNext, ct));
            return (copied, await conn.ExecuteScalarAsync<long?>(Cmd(RewriteSwapSql.AnalyzedRowsNext, ct)));
        }
        finally
        {
            await conn.ExecuteAsync(Cmd(RewriteSwapSql.BulkLoadOff, ct));
        }
    }

    /// <summary>
    /// Switches the triggers from noting to mirroring (each switch waits for the writers under the old trigger to
    /// finish), then copies the noted lanes again as they stand.
    /// </summary>
    public static async Task CatchUpAsync(MySqlConnection conn, long bandBase, long oldestShift, DateTime now, CancellationToken ct)
    {
        await TriggersAsync(conn, RewriteSwapSql.MirrorTriggers(oldestShift), ct);
        await Retry.OnDeadlockAsync(async c =>
        {
            await using var tx = await conn.BeginReadCommittedAsync(c);
            await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.LockTouched, null, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.DeleteTouched, null, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.CopyTouched, new { BandBase = bandBase, OldestShift = oldestShift, Now = now }, tx, cancellationToken: c));
            await tx.CommitAsync(c);
            return 0;
        }, ct);
    }

    /// <summary>
    /// The new ordering's lanes counted against the old one's, after the catch-up (<see cref="RewriteSwapSql.CountLanes"/>);
    /// <see cref="SwapCount.Lost"/> is what the rename would lose.
    /// </summary>
    public static Task<SwapCount> CountAsync(MySqlConnection conn, CancellationToken ct) =>
        conn.QuerySingleAsync<SwapCount>(WholeQueueCommand.Of(RewriteSwapSql.CountLanes, null, null, ct));

    /// <summary>Renames the new ordering into place and drops the old one with its triggers.</summary>
    public static async Task SwapAsync(MySqlConnection conn, CancellationToken ct)
    {
        await DdlAsync(conn, RewriteSwapSql.Swap, ct);
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.DropRetired, ct));
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.ForgetTouched, ct));
    }

    /// <summary>
    /// Trigger statements one at a time, each when ordering is free (<see cref="DdlAsync"/>). Each holds ordering
    /// whole only for its own 1-7 ms; under one LOCK TABLES the three of a phase held it for all of theirs at once,
    /// which a statement that waited for the lock needed, and one that asks without waiting does not. Safe one by one:
    /// each waits for every transaction that wrote under the triggers before it, so by the time the last is in place,
    /// every write that no trigger of the new phase saw has committed (before the copy reads, or before the catch-up
    /// reads the notes).
    /// </summary>
    private static async Task TriggersAsync(MySqlConnection conn, string[] statements, CancellationToken ct)
    {
        foreach (var sql in statements)
        {
            await DdlAsync(conn, sql, ct);
        }
    }

    /// <summary>
    /// How long a step tries for an instant when no transaction holds ordering before it queues for the lock like any
    /// DDL statement (a second at a time, 10 times): a transaction that keeps ordering longer cannot hold the rewrite
    /// up for good.
    /// </summary>
    internal static readonly TimeSpan FreeWindowSearch = TimeSpan.FromSeconds(5);

    /// <summary>
    /// A DDL statement that needs ordering's metadata lock exclusively. A statement that waits for that lock holds back
    /// every claim that comes after it until the transactions before it have ended (MDL grants a waiting exclusive
    /// request first), and claims that began meanwhile took 40-85 ms against 32 without a rewrite (docs/DESIGN.md "The
    /// swap rewrite"). So it is first asked without waiting (<see cref="RewriteSwapSql.WithoutMetadataWait"/>) every
    /// 1-3 ms, which queues nobody; claims hold ordering for a statement at a time, so the lock is free most instants.
    /// </summary>
    private static async Task DdlAsync(MySqlConnection conn, string sql, CancellationToken ct)
    {
        var started = Stopwatch.GetTimestamp();
        var asked = RewriteSwapSql.WithoutMetadataWait(sql);
        while (Stopwatch.GetElapsedTime(started) < FreeWindowSearch)
        {
            try
            {
                await conn.ExecuteAsync(Cmd(asked, ct));
                return;
            }
            catch (MySqlException e) when (e.ErrorCode == MySqlErrorCode.LockWaitTimeout)
            {
                await Task.Delay(TimeSpan.FromMilliseconds(Random.Shared.Next(1, 4)), ct);
            }
        }
        await Retry.OnDeadlockAsync(c => conn.ExecuteAsync(Cmd(sql, c)), ct, attempts: 10);
    }

    private static CommandDefinition Cmd(string sql, CancellationToken ct) => new(sql, cancellationToken: ct);
}

/// <summary>The lanes of the old ordering, of the new one, and of the finished jobs the new one leaves out.</summary>
public sealed record SwapCount(long Lanes, long Kept, long LeftOut)
{
    /// <summary>The lanes the new ordering must hold: every lane of the old one but those left out on purpose.</summary>
    public long Due => Lanes - LeftOut;

    /// <summary>Lanes the new ordering lacks for no reason: zero, or the new table lost them (more than it should hold, below zero).</summary>
    public long Lost => Due - Kept;
}

/// <summary>The points between the swap's steps where <see cref="OrderingRewriter"/> lets a test hold it.</summary>
public enum SwapStep
{
    /// <summary>Leftovers removed, ordering_next empty, the note triggers in place.</summary>
    Prepared,

    /// <summary>Every job's value computed (rewrite_values); nothing copied yet.</summary>
    Filled,

    /// <summary>The bulk copy committed; the triggers still note.</summary>
    Copied,

    /// <summary>The triggers mirror and the noted lanes are copied again; next comes the rename.</summary>
    CaughtUp,
}
