using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Net.Sockets;
using System.Text;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>
/// One tenant's slow uploads must not stall the process (docs/DESIGN.md "Invariants that failures must not break"):
/// nine uploads trickling at 1.1 KB/s, just above Kestrel's minimum rate, hold no pooled connection, transaction or
/// stream slot, so another tenant's 1 MiB upload and a worker's /next still finish within 5 s.
/// </summary>
public sealed class SlowUploadTests(KestrelApiFixture fx) : IClassFixture<KestrelApiFixture>
{
    private const int Tricklers = 9;

    [Fact]
    public async Task Nine_uploads_trickling_at_1_1_KB_per_second_do_not_delay_another_tenants_upload_or_a_claim()
    {
        var (_, slowKey) = await fx.NewCustomerAsync();
        var (_, otherKey) = await fx.NewCustomerAsync();
        var slowJob = await fx.Api.ClientWithKey(slowKey).OpenJobAsync(["text"]);
        var other = fx.Api.ClientWithKey(otherKey);
        var otherJob = await other.OpenJobAsync(["text"]);
        using var stop = new CancellationTokenSource();
        using var bursts = new CountdownEvent(Tricklers);
        var tricklers = Enumerable.Range(0, Tricklers).Select(i => TrickleAsync(slowKey, slowJob, i, bursts, stop.Token)).ToList();
        try
        {
            await Eventually.UntilAsync(() => bursts.IsSet, "all nine slow uploads have sent their first 300 KiB");
            // The scenario: the nine uploads settle into their trickle, deep inside whatever the server does with them.
            await Task.Delay(TimeSpan.FromSeconds(2));

            var started = Stopwatch.StartNew();
            using var upload = await other.UploadRawAsync(otherJob, new byte[1024 * 1024], "big.bin", "application/octet-stream");
            Assert.Equal(HttpStatusCode.Created, upload.StatusCode);
            var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
            using var next = await worker.PostAsJsonAsync(U("/next"), new { tasks = new[] { "text" }, worker = "unhurried" });
            Assert.Equal(HttpStatusCode.OK, next.StatusCode);
            Assert.True(started.Elapsed < TimeSpan.FromSeconds(5), $"the upload and the claim took {started.Elapsed.TotalSeconds:F1} s");
            Assert.All(tricklers, t => Assert.False(t.IsCompleted, "a slow upload ended before the check: " + t.Exception?.Message));
        }
        finally
        {
            await stop.CancelAsync();
            await Task.WhenAll(tricklers);
        }
    }

    /// <summary>A raw upload declaring 1 MiB: 300 KiB at once, then about 1.1 KB/s until <paramref name="ct"/>, then dropped.</summary>
    private async Task TrickleAsync(string key, long job, int n, CountdownEvent bursts, CancellationToken ct)
    {
        using var socket = new TcpClient();
        await socket.ConnectAsync(IPAddress.Loopback, fx.Port);
        var stream = socket.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes($"POST /jobs/{job}/documents?name=slow-{n}.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + $"Authorization: Bearer {key}\r\nContent-Type: application/octet-stream\r\nContent-Length: {1024 * 1024}\r\n\r\n"), CancellationToken.None);
        // Past the grouped size and the in-memory probe at once, so the upload takes the streamed path; then a trickle.
        await stream.WriteAsync(new byte[300 * 1024], CancellationToken.None);
        bursts.Signal();
        var chunk = new byte[110];
        try
        {
            while (!ct.IsCancellationRequested)
            {
                await stream.WriteAsync(chunk, ct);
                await stream.FlushAsync(ct);
                await Task.Delay(100, ct); // the scenario: 110 bytes every 100 ms
            }
        }
        catch (OperationCanceledException)
        {
        }
        socket.Client.LingerState = new LingerOption(true, 0);
    }
}
