using Dapper;
using Microsoft.Extensions.Logging;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>The swap rewrite's run (docs/DESIGN.md "The swap rewrite", "The fence").</summary>
public sealed partial class OrderingRewriter
{
    /// <summary>
    /// For tests: awaited after each step of a swap, so a test can hold the swap between two steps and write, kill a
    /// connection or start a second rewrite meanwhile.
    /// </summary>
    internal Func<SwapStep, Task>? AfterSwapStep { get; set; }

    /// <summary>
    /// The new ordering built beside the old one and renamed into its place (<see cref="OrderingSwap"/>), on a
    /// connection of its own: its DDL commits as it goes, while the caller's transaction keeps the 'rewrite' lock until
    /// the log row is written. That row lock sits on an idle connection and can die with it (wait_timeout, a proxy, a
    /// killer of idle transactions) while this one goes on, so the swap's tables and triggers are fenced by a lock of
    /// this connection's own, which DDL does not release (<see cref="OrderingSwap.LockAsync"/>): no other rewrite or
    /// sweep touches them until this one has renamed or given up. Right before the rename the 'rewrite' lock is checked
    /// again, so a swap whose rewrite can no longer be logged gives up instead of renaming. The values stay in the
    /// current band: the rename, not a commit, makes them visible at once. Should a step fail, the triggers and the
    /// half-built table are removed, and the old ordering stands. Right before the rename the new table is counted
    /// against the old one (<see cref="OrderingSwap.CountAsync"/>): one that came short is dropped and built again, up
    /// to <see cref="SwapAttempts"/> times, and is never renamed into place; after the last, the caller rewrites in place.
    /// </summary>
    private async Task<(int Ranked, int Updated, int Removed)> SwapAsync(MySqlConnection rewriteConn, MySqlTransaction rewriteTx,
        string mode, long bandBase, DateTime now, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        await OrderingSwap.LockAsync(conn, ct);
        try
        {
            for (var attempt = 1; ; attempt++)
            {
                try
                {
                    return await SwapOnceAsync(conn, rewriteConn, rewriteTx, mode, bandBase, now, ct);
                }
                catch (SwapLostLanesException e) when (attempt < SwapAttempts)
                {
                    SwapRedone(logger, e.Shortfall, attempt);
                }
            }
        }
        finally
        {
            await OrderingSwap.UnlockAsync(conn);
        }
    }

    /// <summary>
    /// The swap, or null when every swap of this rewrite counted short and was dropped: the lanes are then all still in
    /// ordering, and the caller writes the period's order in place, in its transaction, rather than keep the last one's.
    /// </summary>
    private async Task<(int Ranked, int Updated, int Removed)?> SwapOrGiveUpAsync(MySqlConnection rewriteConn, MySqlTransaction rewriteTx,
        string mode, long bandBase, DateTime now, CancellationToken ct)
    {
        try
        {
            return await SwapAsync(rewriteConn, rewriteTx, mode, bandBase, now, ct);
        }
        catch (SwapLostLanesException e)
        {
            SwapFellBack(logger, e);
            return null;
        }
    }

    /// <summary>
    /// How many times one rewrite builds a new ordering whose count came short (<see cref="SwapLostLanesException"/>)
    /// before it gives up on the swap and rewrites the ordering in place.
    /// </summary>
    internal const int SwapAttempts = 3;

    private async Task<(int Ranked, int Updated, int Removed)> SwapOnceAsync(MySqlConnection conn, MySqlConnection rewriteConn,
        MySqlTransaction rewriteTx, string mode, long bandBase, DateTime now, CancellationToken ct)
    {
        int ranked, copied;
        long? analyzed;
        SwapCount count;
        try
        {
            await OrderingSwap.PrepareAsync(conn, ct);
            await StepAsync(SwapStep.Prepared);
            await FillValuesAsync(conn, null, byRange: true, mode, bandBase, now, ct);
            ranked = (int)await conn.ExecuteScalarAsync<long>(Cmd(RewriteSql.CountRanked, null, null, ct));
            await StepAsync(SwapStep.Filled);
            var shift = OrderingSwap.OldestShift(mode, ranked);
            (copied, analyzed) = await OrderingSwap.CopyAsync(conn, bandBase, shift, now, ct);
            await StepAsync(SwapStep.Copied);
            await OrderingSwap.CatchUpAsync(conn, bandBase, shift, now, ct);
            await StepAsync(SwapStep.CaughtUp);
            count = await OrderingSwap.CountAsync(conn, ct);
            if (count.Lost != 0)
            {
                throw new SwapLostLanesException(count, copied, analyzed);
            }
            await StillLockedAsync(rewriteConn, rewriteTx, ct);
            await OrderingSwap.SwapAsync(conn, ct);
        }
        catch (Exception e) when (e is MySqlException or OperationCanceledException or RewriteLockLostException or SwapLostLanesException)
        {
            // Not on the caller's token: a cancelled rewrite must still take its triggers away. Should that fail
            // too, the override sweep or the next rewrite removes them, under the same fence.
            try
            {
                if (!await OrderingSwap.AbandonAsync(conn, db))
                {
                    SwapLeftovers(logger, null);
                }
            }
            catch (MySqlException cleanup)
            {
                SwapLeftovers(logger, cleanup);
            }
            throw;
        }
        await conn.ExecuteAsync(Cmd(RewriteSql.DropValues, null, null, ct));
        return (ranked, copied, (int)count.LeftOut);
    }

    private Task StepAsync(SwapStep step) => AfterSwapStep?.Invoke(step) ?? Task.CompletedTask;

    /// <summary>
    /// The 'rewrite' row lock taken again on its own connection, a no-op while it still holds it. A connection that
    /// died took the lock with it, and another rewrite may be waiting for this swap's fence: the rename would make a
    /// rewrite no log row can record, so this one gives up and lets that one build the ordering.
    /// </summary>
    private async Task StillLockedAsync(MySqlConnection rewriteConn, MySqlTransaction rewriteTx, CancellationToken ct)
    {
        try
        {
            await rewriteConn.ExecuteAsync(Cmd(RewriteSql.LockRewrite, null, rewriteTx, ct));
        }
        catch (Exception e) when (e is MySqlException or InvalidOperationException or IOException)
        {
            SwapLockLost(logger, e);
            throw new RewriteLockLostException(e);
        }
    }

    [LoggerMessage(EventId = 4004, Level = LogLevel.Warning, Message = "A failed swap rewrite could not remove its triggers; the override sweep will")]
    private static partial void SwapLeftovers(ILogger logger, Exception? error);

    [LoggerMessage(EventId = 4006, Level = LogLevel.Error, Message = "The swap rewrite's new ordering {Shortfall}; it was dropped without renaming and built again (attempt {Attempt})")]
    private static partial void SwapRedone(ILogger logger, string shortfall, int attempt);

    [LoggerMessage(EventId = 4007, Level = LogLevel.Error, Message = "Every swap of this rewrite counted short; the ordering is rewritten in place instead")]
    private static partial void SwapFellBack(ILogger logger, SwapLostLanesException error);

    [LoggerMessage(EventId = 4005, Level = LogLevel.Warning, Message = "The swap rewrite lost its 'rewrite' lock before the rename; it gives up without renaming, and the old ordering stands until a rewrite that holds the lock builds the new one")]
    private static partial void SwapLockLost(ILogger logger, Exception error);
}

/// <summary>
/// The new ordering counted short before its rename (docs/DESIGN.md "The count before the rename"): renamed into
/// place, it would have lost lanes, and their jobs would never be claimed again.
/// </summary>
public sealed class SwapLostLanesException(SwapCount count, int copied, long? analyzed)
    : Exception($"The swap rewrite's new ordering {Describe(count, copied, analyzed)} ({count.Lanes} in the old one, {count.LeftOut} of them left out on purpose); it was not renamed into place")
{
    /// <summary>What the count found, as event 4006 and this exception's message say it.</summary>
    public string Shortfall => Describe(Count, Copied, Analyzed);

    public SwapCount Count { get; } = count;

    public int Copied { get; } = copied;

    /// <summary>
    /// The new table's rows as InnoDB estimated them right after the copy committed: about none if the commit lost the
    /// copy's rows, about <see cref="Copied"/> if they went later.
    /// </summary>
    public long? Analyzed { get; } = analyzed;

    private static string Describe(SwapCount count, int copied, long? analyzed) =>
        $"held {count.Kept} lanes where {count.Due} were due ({copied} copied in bulk, about {analyzed} there by the statistics taken right after the copy)";
}

/// <summary>The 'rewrite' row lock's connection ended while a swap was building (docs/DESIGN.md "The fence").</summary>
public sealed class RewriteLockLostException(Exception inner)
    : Exception("The ordering rewrite lost its 'rewrite' lock; the swap gave up before its rename", inner);
