using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// Reads the claim epoch (<see cref="ClaimSql.ReadEpoch"/>) for the claim-ahead buffer, one read shared by every caller
/// that arrives while it runs. A caller gets a read that began after it asked: one already on its way may have been sent
/// before a cancel that committed just before the caller came, so latecomers share the next read instead. At most one
/// read is in flight, and at most one more waits behind it, whatever the number of /next calls.
/// </summary>
/// <remarks>
/// The reads go over a connection held for them (<see cref="HeldConnection"/>), not one from the pool each: the pool's
/// reset before each use was two of the read's three round trips, at about one read per four handouts. Each read is its
/// own autocommit transaction, so it sees every epoch committed before it began. A read that fails on the held
/// connection (a server that restarted under it) is made once more on a fresh one.
/// </remarks>
public sealed class ClaimEpoch(MySqlDataSource db) : IAsyncDisposable
{
    private readonly Lock gate = new();
    private readonly HeldConnection connection = new(db);
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

    /// <summary>A read writes nothing, so one that failed on a kept connection may always be made again.</summary>
    private Task<long> ReadOnceAsync() => connection.RunAsync(async use =>
    {
        var epoch = await use.Connection.ExecuteScalarAsync<long>(ClaimSql.ReadEpoch);
        use.Keep();
        return epoch;
    }, mayRedo: () => true, CancellationToken.None);

    public ValueTask DisposeAsync() => connection.DisposeAsync();

    private static TaskCompletionSource<long> New() => new(TaskCreationOptions.RunContinuationsAsynchronously);
}
