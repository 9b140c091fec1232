using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Ordering;

/// <summary>
/// The steps of the swap rewrite (<see cref="RewriteSwapSql"/>, docs/DESIGN.md "The swap rewrite") on the rewrite's
/// own connection, which holds rewrite_values. Every DDL step waits at most a second for ordering's metadata lock
/// (claims queue behind a waiting DDL statement) and is tried again after a timeout.
/// </summary>
internal static class OrderingSwap
{
    /// <summary>Removes what a rewrite stopped half-way left, and starts the notes and an empty ordering_next.</summary>
    public static async Task PrepareAsync(MySqlConnection conn, CancellationToken ct)
    {
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.BoundMetadataWait, ct));
        await CleanUpAsync(conn, await TriggersLeftAsync(conn, ct), ct);
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.CreateNext, ct));
        await TriggersAsync(conn, RewriteSwapSql.LockForNotes, RewriteSwapSql.NoteTriggers, ct);
    }

    /// <summary>
    /// For the override sweep, which holds the 'rewrite' lock (so no swap is building): the triggers of a swap whose
    /// process died, which would otherwise cost every lane write a second row write until the next rewrite.
    /// </summary>
    public static async Task RemoveLeftoversAsync(MySqlDataSource db, CancellationToken ct)
    {
        await using var conn = await db.OpenConnectionAsync(ct);
        if (await TriggersLeftAsync(conn, ct))
        {
            await conn.ExecuteAsync(Cmd(RewriteSwapSql.BoundMetadataWait, ct));
            await CleanUpAsync(conn, triggersLeft: true, ct);
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
            await TriggersAsync(conn, RewriteSwapSql.LockForNotes, RewriteSwapSql.DropTriggers, ct);
        }
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.DropWorkTables, ct));
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.ForgetTouched, ct));
    }

    /// <summary>Copies every lane in bulk; returns the lanes written.</summary>
    public static async Task<int> CopyAsync(MySqlConnection conn, long bandBase, DateTime now, CancellationToken ct)
    {
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.BulkLoadOn, ct));
        try
        {
            await using var tx = await conn.BeginReadCommittedAsync(ct);
            var copied = await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.CopyAll, new { BandBase = bandBase, Now = now }, tx, cancellationToken: ct));
            await tx.CommitAsync(ct);
            await conn.ExecuteAsync(Cmd(RewriteSwapSql.AnalyzeNext, ct));
            return copied;
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
    public static async Task CatchUpAsync(MySqlConnection conn, long bandBase, DateTime now, CancellationToken ct)
    {
        await TriggersAsync(conn, RewriteSwapSql.LockForMirror, RewriteSwapSql.MirrorTriggers, ct);
        await Retry.OnDeadlockAsync(async c =>
        {
            await using var tx = await conn.BeginReadCommittedAsync(c);
            await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.LockTouched, null, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.DeleteTouched, null, tx, cancellationToken: c));
            await conn.ExecuteAsync(new CommandDefinition(RewriteSwapSql.CopyTouched, new { BandBase = bandBase, Now = now }, tx, cancellationToken: c));
            await tx.CommitAsync(c);
            return 0;
        }, ct);
    }

    public static Task<int> CountLeftOutAsync(MySqlConnection conn, CancellationToken ct) =>
        conn.ExecuteScalarAsync<int>(Cmd(RewriteSwapSql.CountLeftOut, ct));

    /// <summary>Renames the new ordering into place and drops the old one with its triggers.</summary>
    public static async Task SwapAsync(MySqlConnection conn, CancellationToken ct)
    {
        await DdlAsync(conn, RewriteSwapSql.Swap, ct);
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.DropRetired, ct));
        await conn.ExecuteAsync(Cmd(RewriteSwapSql.ForgetTouched, ct));
    }

    /// <summary>
    /// Trigger statements under one table lock (<see cref="RewriteSwapSql.LockForNotes"/>), all tried again when the
    /// lock's wait (a second) runs out.
    /// </summary>
    private static Task<int> TriggersAsync(MySqlConnection conn, string lockTables, string[] statements, CancellationToken ct) =>
        Retry.OnDeadlockAsync(async c =>
        {
            await conn.ExecuteAsync(Cmd(lockTables, c));
            try
            {
                foreach (var sql in statements)
                {
                    await conn.ExecuteAsync(Cmd(sql, c));
                }
            }
            finally
            {
                await conn.ExecuteAsync(Cmd(RewriteSwapSql.Unlock, CancellationToken.None));
            }
            return statements.Length;
        }, ct, attempts: 10);

    /// <summary>A DDL statement on ordering, tried again when its metadata-lock wait (a second) runs out.</summary>
    private static Task<int> DdlAsync(MySqlConnection conn, string sql, CancellationToken ct) =>
        Retry.OnDeadlockAsync(c => conn.ExecuteAsync(Cmd(sql, c)), ct, attempts: 10);

    private static CommandDefinition Cmd(string sql, CancellationToken ct) => new(sql, cancellationToken: ct);
}
