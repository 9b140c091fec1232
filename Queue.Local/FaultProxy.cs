using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;

namespace Queue.Local;

/// <summary>
/// A TCP proxy between a service and MariaDB that injects the faults a real network and a real server produce, for
/// tests and the fault soak (Queue.Bench) of what a write does when its outcome is unknown. It reads the MySQL protocol
/// from client to server just far enough to see each command packet ([3-byte length][sequence][command][text]); the
/// connection must not use TLS (connect with <c>SslMode=None</c>, see <see cref="ConnectionString"/>).
/// </summary>
/// <remarks>
/// <see cref="CutAfterCommit"/> is the fault that matters most: the server receives the COMMIT and commits, and the
/// client never hears so. The proxy forwards the COMMIT, waits until the server's answer reaches it (so the commit has
/// certainly happened), drops that answer and closes both sides.
/// </remarks>
public sealed partial class FaultProxy : IAsyncDisposable
{
    private readonly TcpListener listener = new(IPAddress.Loopback, 0);
    private readonly CancellationTokenSource stop = new();
    private readonly ConcurrentDictionary<Link, byte> links = new();
    private int targetPort;
    private Task accepting = Task.CompletedTask;
    private int cutsLeft;
    private string? cutOnlyAfter;
    private int delayMs;
    private int cuts;
    private volatile bool refusing;

    /// <summary>Starts relaying to 127.0.0.1:<paramref name="targetPort"/>; returns the port to connect to instead.</summary>
    public int Start(int targetPort)
    {
        this.targetPort = targetPort;
        listener.Start();
        accepting = AcceptAsync();
        return Port;
    }

    public int Port => ((IPEndPoint)listener.LocalEndpoint).Port;

    /// <summary>Commits whose answer was withheld and whose connection was cut.</summary>
    public int Cuts => Volatile.Read(ref cuts);

    /// <summary><paramref name="connectionString"/> pointed at this proxy, without TLS so the commands can be seen.</summary>
    public string ConnectionString(string connectionString) =>
        new MySqlConnector.MySqlConnectionStringBuilder(connectionString)
        {
            Server = "127.0.0.1",
            Port = (uint)Port,
            SslMode = MySqlConnector.MySqlSslMode.None,
        }.ConnectionString;

    /// <summary>
    /// The next <paramref name="count"/> COMMITs (a COMMIT statement alone, or at the end of a multi-statement query)
    /// reach the server, and their connections are closed before the answer is relayed. With <paramref name="onlyAfter"/>,
    /// only transactions that sent a statement containing that text since their last COMMIT or ROLLBACK count (so that
    /// a background commit of the service does not take the fault meant for the write under test). 0 disarms.
    /// </summary>
    public void CutAfterCommit(int count, string? onlyAfter = null)
    {
        Volatile.Write(ref cutOnlyAfter, onlyAfter);
        Volatile.Write(ref cutsLeft, count);
    }

    /// <summary>While true, every new connection is reset as soon as it is accepted (a database that is down).</summary>
    public bool Refusing
    {
        get => refusing;
        set => refusing = value;
    }

    /// <summary>Holds every chunk relayed, either way, for <paramref name="milliseconds"/> (0: no delay).</summary>
    public void Delay(int milliseconds) => Volatile.Write(ref delayMs, milliseconds);

    /// <summary>Resets every open connection (both sides); new connections are relayed as before.</summary>
    public void ResetAll()
    {
        foreach (var link in links.Keys)
        {
            link.Reset();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await stop.CancelAsync();
        listener.Stop();
        ResetAll();
        await accepting;
        stop.Dispose();
    }

    private async Task AcceptAsync()
    {
        try
        {
            while (true)
            {
                var client = await listener.AcceptTcpClientAsync(stop.Token);
                if (refusing)
                {
                    client.Client.LingerState = new LingerOption(true, 0);
                    client.Dispose();
                    continue;
                }
                _ = ServeAsync(client);
            }
        }
        catch (Exception ex) when (ex is OperationCanceledException or SocketException or ObjectDisposedException)
        {
            // Disposed.
        }
    }

    private async Task ServeAsync(TcpClient client)
    {
        var upstream = new TcpClient();
        var link = new Link(client, upstream);
        links.TryAdd(link, 0);
        try
        {
            await upstream.ConnectAsync(IPAddress.Loopback, targetPort, stop.Token);
            var down = DownAsync(link);
            await UpAsync(link);
            await down;
        }
        catch (Exception ex) when (ex is IOException or SocketException or OperationCanceledException or ObjectDisposedException or TimeoutException)
        {
            // A reset, a cut, a server that died before answering a cut COMMIT, or the end of the test: the connection
            // is over either way.
        }
        finally
        {
            links.TryRemove(link, out _);
            link.Reset();
        }
    }

    /// <summary>Server to client: relayed as it comes, except the answer to a COMMIT that is being cut.</summary>
    private async Task DownAsync(Link link)
    {
        var buffer = new byte[65536];
        var from = link.Upstream.GetStream();
        var to = link.Client.GetStream();
        int n;
        while ((n = await from.ReadAsync(buffer, stop.Token)) > 0)
        {
            if (link.Cutting)
            {
                link.AnswerWithheld.TrySetResult();
                return;
            }
            await DelayAsync();
            await to.WriteAsync(buffer.AsMemory(0, n), stop.Token);
        }
        link.Client.Client.Shutdown(SocketShutdown.Send);
    }

    /// <summary>Client to server: relayed packet by packet, watching the commands for COMMIT.</summary>
    private async Task UpAsync(Link link)
    {
        var buffer = new byte[65536];
        var from = link.Client.GetStream();
        var to = link.Upstream.GetStream();
        var packets = new MySqlCommandReader();
        int n;
        while ((n = await from.ReadAsync(buffer, stop.Token)) > 0)
        {
            await DelayAsync();
            var offset = 0;
            while (offset < n)
            {
                var (used, command) = packets.Feed(buffer.AsSpan(offset, n - offset));
                if (command is not null && Commits(link, command))
                {
                    await CutAsync(link, to, buffer.AsMemory(offset, used));
                    return;
                }
                await to.WriteAsync(buffer.AsMemory(offset, used), stop.Token);
                offset += used;
            }
        }
        link.Upstream.Client.Shutdown(SocketShutdown.Send);
    }

    /// <summary>Whether this command ends a transaction with COMMIT that is to be cut; tracks the marker text.</summary>
    private bool Commits(Link link, string command)
    {
        var marker = Volatile.Read(ref cutOnlyAfter);
        if (marker is not null && command.Contains(marker, StringComparison.OrdinalIgnoreCase))
        {
            link.SawMarker = true;
        }
        var ends = EndsWithCommit().IsMatch(command);
        var armed = ends && (marker is null || link.SawMarker);
        if (ends || EndsWithRollback().IsMatch(command))
        {
            link.SawMarker = false;
        }
        if (!armed)
        {
            return false;
        }
        while (true)
        {
            var left = Volatile.Read(ref cutsLeft);
            if (left <= 0)
            {
                return false;
            }
            if (Interlocked.CompareExchange(ref cutsLeft, left - 1, left) == left)
            {
                return true;
            }
        }
    }

    private async Task CutAsync(Link link, NetworkStream to, ReadOnlyMemory<byte> lastBytes)
    {
        link.Cutting = true;
        await to.WriteAsync(lastBytes, stop.Token);
        // The server answers only once the commit is durable; until then the client must not be cut loose, or this
        // would test a rollback rather than a commit whose outcome is unknown.
        await link.AnswerWithheld.Task.WaitAsync(TimeSpan.FromSeconds(10), stop.Token);
        Interlocked.Increment(ref cuts);
        link.Reset();
    }

    private Task DelayAsync()
    {
        var ms = Volatile.Read(ref delayMs);
        return ms > 0 ? Task.Delay(ms, stop.Token) : Task.CompletedTask;
    }

    [GeneratedRegex(@"(^|;)\s*COMMIT\s*;?\s*$", RegexOptions.IgnoreCase)]
    private static partial Regex EndsWithCommit();

    [GeneratedRegex(@"(^|;)\s*ROLLBACK\s*;?\s*$", RegexOptions.IgnoreCase)]
    private static partial Regex EndsWithRollback();

    private sealed class Link(TcpClient client, TcpClient upstream)
    {
        private int reset;

        public TcpClient Client { get; } = client;

        public TcpClient Upstream { get; } = upstream;

        public volatile bool Cutting;

        public bool SawMarker { get; set; }

        public TaskCompletionSource AnswerWithheld { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Closes both sides at once: the client with a reset, the server with a plain close.</summary>
        public void Reset()
        {
            if (Interlocked.Exchange(ref reset, 1) == 1)
            {
                return;
            }
            try
            {
                Client.Client.LingerState = new LingerOption(true, 0);
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
            {
            }
            Client.Dispose();
            Upstream.Dispose();
        }
    }
}
