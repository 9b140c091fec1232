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
public sealed class ClaimEpoch(MySqlDataSource db)
{
    private readonly Lock gate = new();
    private TaskCompletionSource<long>? current;
    private TaskCompletionSource<long>? queued;

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
                await using var conn = await db.OpenConnectionAsync(CancellationToken.None);
                read.TrySetResult(await conn.ExecuteScalarAsync<long>(ClaimSql.ReadEpoch));
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

    private static TaskCompletionSource<long> New() => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
