using MySqlConnector;

namespace Queue.Core.Claims;

/// <summary>
/// A claim's (or a completion's) READ COMMITTED transaction, begun and committed by hand so that neither costs a round trip of its own.
/// MySqlConnector's <c>BeginTransactionAsync</c> sends its two statements (isolation level, then START TRANSACTION) one
/// round trip each, and <c>CommitAsync</c> a third. Here the begin rides the claim's first locking statement: the lane
/// walk before it is a consistent read, which READ COMMITTED serves the same inside a transaction or out of it, and a
/// claim that finds no lane never begins one. The COMMIT rides the claim's last batch when there is one. A claim of a
/// one-item job makes four round trips where it made seven (docs/DESIGN.md "Claim and completion round trips").
/// </summary>
/// <remarks>
/// Commands run with no <see cref="MySqlTransaction"/>: the connection has none, and the server's transaction is the one
/// these statements opened. Whoever runs a claim must call <see cref="RollbackAsync"/> when it fails, before the
/// connection goes back to the pool; a ROLLBACK after a COMMIT that went through changes nothing.
/// </remarks>
/// <param name="isolationSet">The session's level is READ COMMITTED already: the connection was kept, not reset, since a
/// transaction of this kind set it (<see cref="Data.HeldConnection.Use.Reused"/>), so the begin leaves it out.</param>
internal sealed class ClaimTransaction(MySqlConnection connection, bool isolationSet = false)
{
    /// <summary>
    /// The session's level, as the driver's own begin sets it, whatever the server's default is. Not the next-transaction
    /// form: on a server whose sessions start with autocommit off, the walk before the begin has opened a transaction
    /// already, and that form is refused inside one; START TRANSACTION then ends the walk's transaction.
    /// </summary>
    private const string Isolation = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";

    private const string Start = "START TRANSACTION";

    private bool begun;
    private bool commitSent;

    public MySqlConnection Connection => connection;

    /// <summary>The COMMIT went out (in a batch or alone): when no answer came, the claim may have committed.</summary>
    public bool CommitSent => commitSent;

    /// <summary>Runs a locking read, the transaction's first statement if it has not begun.</summary>
    public async Task<MySqlDataReader> ReadAsync(MySqlCommand command, CancellationToken ct)
    {
        BeginWith(command);
        return await command.ExecuteReaderAsync(ct);
    }

    /// <summary>Runs a batch that reads, its statements the transaction's first if it has not begun.</summary>
    public async Task<MySqlDataReader> ReadAsync(MySqlBatch batch, CancellationToken ct)
    {
        BeginWith(batch);
        return await batch.ExecuteReaderAsync(ct);
    }

    /// <summary>Runs a writing batch inside the transaction; the claim's last (<paramref name="commit"/>) carries the COMMIT.</summary>
    public async Task RunAsync(MySqlBatch batch, bool commit, CancellationToken ct)
    {
        BeginWith(batch);
        if (commit)
        {
            CommitWith(batch);
        }
        await batch.ExecuteNonQueryAsync(ct);
    }

    /// <summary>Sends the writes a claim queued, if any; the claim's last batch (<paramref name="commit"/>) carries the COMMIT.</summary>
    public async Task WriteAsync(ClaimWrites writes, bool commit, CancellationToken ct)
    {
        if (writes.IsEmpty)
        {
            return;
        }
        await using var batch = new MySqlBatch(connection);
        writes.MoveTo(batch);
        await RunAsync(batch, commit, ct);
    }

    /// <summary>
    /// Puts the begin in front of <paramref name="command"/>, unless the transaction has begun already. The claim's
    /// writing batches call it too, although a lock always came first: a write can never run outside the transaction.
    /// </summary>
    public void BeginWith(MySqlCommand command)
    {
        if (!begun)
        {
            command.CommandText = (isolationSet ? "" : Isolation + ";\n") + Start + ";\n" + command.CommandText;
            begun = true;
        }
    }

    /// <summary>Puts the begin in front of <paramref name="batch"/>'s statements, unless the transaction has begun already.</summary>
    public void BeginWith(MySqlBatch batch)
    {
        if (!begun)
        {
            batch.BatchCommands.Insert(0, new MySqlBatchCommand(Start));
            if (!isolationSet)
            {
                batch.BatchCommands.Insert(0, new MySqlBatchCommand(Isolation));
            }
            begun = true;
        }
    }

    /// <summary>Ends <paramref name="batch"/>, the claim's last, with the COMMIT.</summary>
    public void CommitWith(MySqlBatch batch)
    {
        if (begun && !commitSent)
        {
            batch.BatchCommands.Add(new MySqlBatchCommand("COMMIT"));
            commitSent = true;
        }
    }

    /// <summary>Commits in a round trip of its own, unless the last batch carried the COMMIT or nothing began.</summary>
    public async Task CommitAsync(CancellationToken ct)
    {
        if (begun && !commitSent)
        {
            await using var commit = new MySqlCommand("COMMIT", connection);
            commitSent = true;
            await commit.ExecuteNonQueryAsync(ct);
        }
    }

    /// <summary>
    /// Rolls back after a failure, so that no lock outlives the claim. A connection that failed this far is most
    /// likely gone, and the server rolls back a gone connection's transaction itself: that failure is not the caller's.
    /// </summary>
    public async Task RollbackAsync()
    {
        if (!begun || connection.State != System.Data.ConnectionState.Open)
        {
            return;
        }
        try
        {
            await using var rollback = new MySqlCommand("ROLLBACK", connection);
            await rollback.ExecuteNonQueryAsync(CancellationToken.None);
        }
        catch (Exception ex) when (ex is MySqlException or InvalidOperationException or IOException)
        {
            // The claim's own error is the one to report; see the summary.
        }
    }
}
