using MySqlConnector;

namespace Queue.Core.Data;

/// <summary>
/// One pooled connection kept open between uses by a path that runs often and mostly one use at a time (the claim
/// epoch's read, the completion transaction). A connection taken from the pool is reset first, COM_RESET_CONNECTION and
/// SET NAMES, two round trips the server answers; kept open, it is not. A use that does not end with
/// <see cref="Use.Keep"/> (an error, a transaction that may still be open) gives the connection back to the pool, which
/// resets it before its next use, and the next use takes a fresh one. A second use while the first runs takes its own
/// connection from the pool. A kept connection idle for a while is pinged before use, as the pool would, so a server
/// restart or an idle timeout costs a ping, not a failed use. A connection that died sooner fails its next use: a use
/// that can be made again safely (nothing committed yet) is made again on a fresh connection by <see cref="RunAsync"/>.
/// </summary>
public sealed class HeldConnection(MySqlDataSource db) : IAsyncDisposable
{
    private static readonly TimeSpan PingAfter = TimeSpan.FromSeconds(5);

    private MySqlConnection? idle;
    private long idleSince;
    private volatile bool disposed;

    public async Task<Use> OpenAsync(CancellationToken ct)
    {
        if (Interlocked.Exchange(ref idle, null) is { } kept)
        {
            if (Environment.TickCount64 - Volatile.Read(ref idleSince) < PingAfter.TotalMilliseconds || await kept.PingAsync(ct))
            {
                return new Use(this, kept, reused: true);
            }
            await kept.DisposeAsync();
        }
        return await OpenFreshAsync(ct);
    }

    /// <summary>
    /// Runs <paramref name="work"/> over the held connection. When it fails on a connection kept from an earlier use, and
    /// <paramref name="mayRedo"/> says that failure left nothing committed, it runs once more on a fresh connection: the
    /// kept one may have died while it was idle. <paramref name="work"/> calls <see cref="Use.Keep"/> when it ends clean.
    /// </summary>
    public async Task<T> RunAsync<T>(Func<Use, Task<T>> work, Func<bool> mayRedo, CancellationToken ct)
    {
        await using (var use = await OpenAsync(ct))
        {
            try
            {
                return await work(use);
            }
            catch (Exception ex) when (use.Reused && ex is not OperationCanceledException && ex is not CommitOutcomeUnknownException && mayRedo())
            {
                // Made again below, after this connection went back to the pool (which resets, or drops, it).
            }
        }
        await using var fresh = await OpenFreshAsync(ct);
        return await work(fresh);
    }

    /// <summary>A use of a connection from the pool (reset, so known to work), kept afterwards like any other.</summary>
    private async Task<Use> OpenFreshAsync(CancellationToken ct) => new(this, await db.OpenConnectionAsync(ct), reused: false);

    public async ValueTask DisposeAsync()
    {
        disposed = true;
        if (Interlocked.Exchange(ref idle, null) is { } kept)
        {
            await kept.DisposeAsync();
        }
    }

    private async ValueTask ReturnAsync(MySqlConnection connection, bool keep)
    {
        if (keep && !disposed)
        {
            Volatile.Write(ref idleSince, Environment.TickCount64);
            if (Interlocked.CompareExchange(ref idle, connection, null) is null)
            {
                // A dispose that ran meanwhile may have missed it.
                if (disposed && Interlocked.Exchange(ref idle, null) is { } late)
                {
                    await late.DisposeAsync();
                }
                return;
            }
        }
        await connection.DisposeAsync();
    }

    /// <summary>One use of the held connection (or of a pooled one); dispose it when done.</summary>
    public sealed class Use(HeldConnection owner, MySqlConnection connection, bool reused) : IAsyncDisposable
    {
        private bool keep;

        public MySqlConnection Connection { get; } = connection;

        /// <summary>The connection was kept from an earlier use, not reset by the pool: it may have died since.</summary>
        public bool Reused { get; } = reused;

        /// <summary>The use ended cleanly, no transaction open: the connection may be kept for the next use.</summary>
        public void Keep() => keep = true;

        public ValueTask DisposeAsync() => owner.ReturnAsync(Connection, keep);
    }
}
