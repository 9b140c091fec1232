using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using Queue.Tests.Infrastructure;
using Queue.Tests.Jobs;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>Early 413 (docs/CONTRACT.md "Conventions", limits): a declared length over the route's limit is refused before the body is read.</summary>
public sealed class EarlyRefusalTests(SmallLimitsKestrelFixture fx) : IClassFixture<SmallLimitsKestrelFixture>
{
    [Fact]
    public async Task A_raw_upload_declaring_more_than_the_document_limit_gets_413_before_its_body_is_sent()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.Api.ClientWithKey(key).OpenJobAsync(["text"]);
        using var socket = new System.Net.Sockets.TcpClient();
        await socket.ConnectAsync(IPAddress.Loopback, fx.Port);
        var stream = socket.GetStream();
        // Over the 1,024-byte document limit, under the 4,096-byte request limit: only the document limit refuses it.
        var head = $"POST /jobs/{job}/documents?name=big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            + "Content-Type: application/octet-stream\r\nContent-Length: 2000\r\n\r\n";
        await stream.WriteAsync(Encoding.ASCII.GetBytes(head));
        await stream.WriteAsync(new byte[100]); // and the rest never comes
        await stream.FlushAsync();
        var buffer = new byte[4096];
        using var deadline = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var n = await stream.ReadAsync(buffer, deadline.Token);
        var answer = Encoding.ASCII.GetString(buffer, 0, n);
        Assert.StartsWith("HTTP/1.1 413", answer, StringComparison.Ordinal);
        Assert.Contains("application/problem+json", answer, StringComparison.Ordinal);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }
}
