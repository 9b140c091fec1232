using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>Required reliability test 14, its second half: an upload slower than Kestrel's minimum data rate is cut off and stores nothing.</summary>
[TakesAbout(11)]
public sealed class SlowLorisTests(KestrelApiFixture fx) : IClassFixture<KestrelApiFixture>
{
    [Fact]
    public async Task An_upload_sending_ten_bytes_a_second_is_cut_off_within_half_a_minute_and_stores_nothing()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.Api.ClientWithKey(key).OpenJobAsync(["text"]);
        using var socket = new TcpClient();
        await socket.ConnectAsync(IPAddress.Loopback, fx.Port);
        var stream = socket.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes($"POST /jobs/{job}/documents?name=loris.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + $"Authorization: Bearer {key}\r\nContent-Type: application/octet-stream\r\nContent-Length: {1024 * 1024}\r\n\r\n"));
        var started = Stopwatch.StartNew();
        var cutOff = false;
        while (started.Elapsed < TimeSpan.FromSeconds(30) && !cutOff)
        {
            try
            {
                await stream.WriteAsync(new byte[10]);
                await Task.Delay(1000); // the scenario: ten bytes a second, a hundredth of the minimum rate
                cutOff = socket.Client.Poll(0, SelectMode.SelectRead) && (socket.Available == 0 || AnswerIsError(stream));
            }
            catch (IOException)
            {
                cutOff = true;
            }
        }
        Assert.True(cutOff, $"the connection was still open after {started.Elapsed.TotalSeconds:F0} s");
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    /// <summary>Kestrel may answer (408 or 400) before it closes; any answer to an unfinished upload means it was refused.</summary>
    private static bool AnswerIsError(NetworkStream stream)
    {
        var buffer = new byte[512];
        var n = stream.Read(buffer);
        var head = Encoding.ASCII.GetString(buffer, 0, n);
        return n == 0 || head.StartsWith("HTTP/1.1 4", StringComparison.Ordinal);
    }
}
