using System.Net;
using System.Net.Sockets;

namespace Queue.Tests.Client;

/// <summary>
/// A TCP proxy that behaves like a balancer with an idle timeout: a connection quiet for longer than
/// <paramref name="idle"/> is forgotten without a word, and the next bytes the client sends on it get a reset.
/// </summary>
public sealed class IdleDroppingProxy(int upstreamPort, TimeSpan idle) : IAsyncDisposable
{
    private readonly TcpListener listener = new(IPAddress.Loopback, 0);
    private readonly CancellationTokenSource stop = new();
    private Task accepting = Task.CompletedTask;
    private int drops;

    public Uri BaseAddress => new($"http://127.0.0.1:{((IPEndPoint)listener.LocalEndpoint).Port}/");

    /// <summary>Connections reset because they had been idle.</summary>
    public int Drops => Volatile.Read(ref drops);

    public void Start()
    {
        listener.Start();
        accepting = AcceptAsync();
    }

    private async Task AcceptAsync()
    {
        try
        {
            while (true)
            {
                var client = await listener.AcceptTcpClientAsync(stop.Token);
                _ = ServeAsync(client);
            }
        }
        catch (OperationCanceledException)
        {
            // Disposed.
        }
    }

    private async Task ServeAsync(TcpClient client)
    {
        using var upstream = new TcpClient();
        using (client)
        {
            try
            {
                await upstream.ConnectAsync(IPAddress.Loopback, upstreamPort, stop.Token);
                var last = DateTime.UtcNow;
                using var done = CancellationTokenSource.CreateLinkedTokenSource(stop.Token);
                var down = PumpAsync(upstream.GetStream(), client.GetStream(), () => last = DateTime.UtcNow, done.Token);
                var buffer = new byte[65536];
                var fromClient = client.GetStream();
                int n;
                while ((n = await fromClient.ReadAsync(buffer, done.Token)) > 0)
                {
                    if (DateTime.UtcNow - last > idle)
                    {
                        Interlocked.Increment(ref drops);
                        client.Client.LingerState = new LingerOption(true, 0); // close = RST, as a balancer that forgot the flow
                        break;
                    }
                    last = DateTime.UtcNow;
                    await upstream.GetStream().WriteAsync(buffer.AsMemory(0, n), done.Token);
                }
                await done.CancelAsync();
                await down;
            }
            catch (Exception e) when (e is IOException or SocketException or OperationCanceledException)
            {
                // One side went away: so does the other.
            }
        }
    }

    private static async Task PumpAsync(Stream from, Stream to, Action touched, CancellationToken ct)
    {
        var buffer = new byte[65536];
        try
        {
            int n;
            while ((n = await from.ReadAsync(buffer, ct)) > 0)
            {
                touched();
                await to.WriteAsync(buffer.AsMemory(0, n), ct);
            }
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException)
        {
            // The connection ended.
        }
    }

    public async ValueTask DisposeAsync()
    {
        await stop.CancelAsync();
        listener.Stop();
        await accepting;
        stop.Dispose();
    }
}
