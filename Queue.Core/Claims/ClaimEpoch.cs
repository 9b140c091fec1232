using System.Diagnostics;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Core.Sql;

namespace Queue.Core.Claims;

/// <summary>
/// Reads the claim epoch (<see cref="ClaimSql.ReadEpoch"/>) for the claim-ahead buffer. A caller gets the value of a read
/// sent at most <see cref="EpochLease.Freshness"/> before it asked: the last one, while it is that fresh, or else the next
/// one (or the one in flight, if sent within that time), shared by every caller that arrives while it runs. Every writer
/// that moves the epoch waits <see cref="EpochLease.Settle"/> after its commit before it answers, so from its answer on,
/// every read a handout uses in any process was sent after that commit and sees it (docs/DESIGN.md "Claim-ahead that keeps the policy"). While callers
/// come, a read goes out in the background once the last is half that old, so a busy filter's handouts seldom wait for
/// one: a read per handout cost a round trip per item at one worker. At most one read is in flight, and at most one
/// more waits behind it, whatever the number of /next calls.
/// </summary>
/// <remarks>
/// The reads go over a connection held for them (<see cref="HeldConnection"/>), not one from the pool each: the pool's
/// reset before each use was two of the read's three round trips, at about one read per four handouts. Each read is its
/// own autocommit transaction, so it sees every epoch committed before it was sent. A read that fails on the held
/// connection (a server that restarted under it) is made once more on a fresh one, and counts as sent at its first try.
/// </remarks>
public sealed class ClaimEpoch(MySqlDataSource db) : IAsyncDisposable
{
    private static readonly long FreshTicks = (long)(EpochLease.Freshness.TotalSeconds * Stopwatch.Frequency);
    private static readonly long RefreshTicks = FreshTicks / 2;

    private readonly Lock gate = new();
    private readonly HeldConnection connection = new(db);
    private TaskCompletionSource<long>? current;
    private TaskCompletionSource<long>? queued;
    private Task<long>? lastRead; // the newest read's answer, kept as a task so that handouts from it allocate nothing
    private long lastSent; // Stopwatch timestamp taken before sending lastRead; 0 before the first
    private long currentSent; // the same for the read in flight

    /// <summary>The epoch as of a moment at most <see cref="EpochLease.Freshness"/> before this call.</summary>
    public Task<long> ReadAsync()
    {
        lock (gate)
        {
            var now = Stopwatch.GetTimestamp();
            if (lastRead is not null && now - lastSent <= FreshTicks)
            {
                if (now - lastSent >= RefreshTicks && current is null)
                {
                    // Nobody waits on a refresh: its failure is observed here, and the next caller whose read is too
                    // old sends one of its own.
                    _ = Start(now).Task.ContinueWith(static t => t.Exception, CancellationToken.None,
                        TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
                }
                return lastRead;
            }
            if (current is null)
            {
                // The read may finish before Start returns (and clear current): answer from the local.
                return Start(now).Task;
            }
            if (now - currentSent <= FreshTicks)
            {
                return current.Task;
            }
            queued ??= New();
            return queued.Task;
        }
    }

    /// <summary>Sends a read now; under the gate.</summary>
    private TaskCompletionSource<long> Start(long now)
    {
        var read = current = New();
        currentSent = now;
        _ = RunAsync(read, now);
        return read;
    }

    private async Task RunAsync(TaskCompletionSource<long> read, long sent)
    {
        while (true)
        {
            try
            {
                var epoch = await ReadOnceAsync();
                lock (gate)
                {
                    if (sent > lastSent)
                    {
                        (lastRead, lastSent) = (Task.FromResult(epoch), sent);
                    }
                }
                read.TrySetResult(epoch);
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
                currentSent = sent = Stopwatch.GetTimestamp();
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
