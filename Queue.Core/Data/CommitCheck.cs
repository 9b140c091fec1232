using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Data;

/// <summary>
/// Commits a transaction whose COMMIT may get no answer (the connection lost after the server received it). Then the
/// transaction may or may not have committed, and redoing it blindly would write it twice. Instead, on a fresh
/// connection: the old session is killed, so that it can no longer commit later, and a locking read of a row only this
/// transaction wrote waits for its fate (a transaction still rolling back or committing holds that row's lock) and says
/// which it was. See docs/DESIGN.md "Writes whose outcome is not known yet".
/// </summary>
public static class CommitCheck
{
    private static readonly TimeSpan[] Pauses = [TimeSpan.Zero, TimeSpan.FromMilliseconds(200), TimeSpan.FromSeconds(1)];

    /// <summary>
    /// Commits; if the COMMIT fails, returns normally when the transaction did commit, rethrows its error when it did not
    /// (a redo is then safe), and throws <see cref="CommitOutcomeUnknownException"/> when that cannot be found out.
    /// </summary>
    /// <param name="landedSql">A locking read (<c>LOCK IN SHARE MODE</c>) that returns a row only if the transaction committed.</param>
    /// <param name="serverThread">The transaction's session (<see cref="MySqlConnection.ServerThread"/>, read while it was open).</param>
    public static async Task CommitAsync(MySqlTransaction tx, MySqlDataSource db, int serverThread, string landedSql, object landedArgs)
    {
        try
        {
            // Never cancelled: a cancel here would leave the outcome unknown for no reason.
            await tx.CommitAsync(CancellationToken.None);
        }
        catch (Exception ex) when (ex is MySqlException or IOException or InvalidOperationException or System.Net.Sockets.SocketException)
        {
            if (!await LandedAsync(db, serverThread, landedSql, landedArgs, ex))
            {
                throw;
            }
        }
    }

    /// <summary>Whether the transaction committed, asked on a fresh connection (a few tries while the database is out of reach).</summary>
    public static async Task<bool> LandedAsync(MySqlDataSource db, int serverThread, string landedSql, object landedArgs, Exception commitError)
    {
        Exception last = commitError;
        foreach (var pause in Pauses)
        {
            await Task.Delay(pause);
            try
            {
                await using var conn = await db.OpenConnectionAsync(CancellationToken.None);
                try
                {
                    await conn.ExecuteAsync(OpsSql.KillSession, new { Thread = serverThread });
                }
                catch (MySqlException gone) when (gone.ErrorCode == MySqlErrorCode.NoSuchThread)
                {
                    // The session is over already: its transaction has committed or rolled back.
                }
                await using var tx = await conn.BeginReadCommittedAsync(CancellationToken.None);
                var landed = await conn.QueryFirstOrDefaultAsync<long?>(new CommandDefinition(landedSql, landedArgs, tx)) is not null;
                await tx.RollbackAsync(CancellationToken.None);
                return landed;
            }
            catch (Exception ex) when (ex is MySqlException or IOException or InvalidOperationException or System.Net.Sockets.SocketException)
            {
                last = ex;
            }
        }
        throw new CommitOutcomeUnknownException("the database did not say whether the write committed", last);
    }
}
