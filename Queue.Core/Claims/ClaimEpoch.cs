using Dapper;
using MySqlConnector;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// Reads the claim epoch (<see cref="ClaimSql.ReadEpoch"/>) for the claim-ahead buffer, one read shared by every caller
/// that arrives while it runs. A caller gets a read that began after it asked: one already on its way may have been sent
/// before a cancel that committed just before the caller came, so latecomers share the next read instead. At most one
/// read is in flight, and at most one more waits behind it, whatever the number of /next calls.
/// </summary>
/// <remarks>
/// The reads go over one connection held for them, not one from the pool each: a pooled connection is reset before use
/// (COM_RESET_CONNECTION and SET NAMES, two round trips the server answers), and at about one read per four handouts
/// that was most of the cost of the read. Only the one read in flight uses it. Each read is its own autocommit
/// transaction, so it sees every epoch committed before it began. A held connection that fails (a restarted server, an
/// idle one the server closed) is dropped, and the read is made once more on a fresh one.
/// </remarks>
public sealed class ClaimEpoch(MySqlDataSource db) : IAsyncDisposable
{
    private readonly Lock gate = new();
    private TaskCompletionSource<long>? current;
    private TaskCompletionSource<long>? queued;

    /// <summary>Used only by the read in flight (<see cref="RunAsync"/>), of which there is at most one.</summary>
    private MySqlConnection? held;

    private volatile bool disposed;

    /// <summary>The epoch as of a moment after this call.</summary>
    public Task<long> ReadAsync()
    {
        lock (gate)
        {
            if (current is null)
            {
                // The read may finish before RunAsync returns (and clear current): answer from the local.
                var read = current = New();
                _ = RunAsync(read);
                return read.Task;
            }
            queued ??= New();
            return queued.Task;
        }
    }

    private async Task RunAsync(TaskCompletionSource<long> read)
    {
        while (true)
        {
            try
            {
                read.TrySetResult(await ReadOnceAsync());
            }
            catch (Exception ex)
            {
                // Every caller of this read sees the failure; the next read starts afresh.
                read.TrySetException(ex);
            }
            lock (gate)
            {
                if (queued is null)
                {
                    current = null;
                    return;
                }
                current = read = queued;
                queued = null;
            }
        }
    }

    private async Task<long> ReadOnceAsync()
    {
        if (held is { } conn)
        {
            try
            {
                return await conn.ExecuteScalarAsync<long>(ClaimSql.ReadEpoch);
            }
            catch (Exception ex) when (ex is MySqlException or InvalidOperationException or IOException)
            {
                held = null;
                await conn.DisposeAsync();
            }
        }
        var fresh = await db.OpenConnectionAsync(CancellationToken.None);
        try
        {
            var epoch = await fresh.ExecuteScalarAsync<long>(ClaimSql.ReadEpoch);
            if (disposed)
            {
                await fresh.DisposeAsync();
            }
            else
            {
                held = fresh;
            }
            return epoch;
        }
        catch
        {
            await fresh.DisposeAsync();
            throw;
        }
    }

    public async ValueTask DisposeAsync()
    {
        disposed = true;
        if (held is { } conn)
        {
            held = null;
            await conn.DisposeAsync();
        }
    }

    private static TaskCompletionSource<long> New() => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
