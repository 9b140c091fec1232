using System.Net;
using System.Net.Sockets;
using System.Text;

using Queue.Core.Sql;
using Queue.Local;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class KestrelTests(KestrelApiFixture fx) : IClassFixture<KestrelApiFixture>
{
    // A large upload is spooled to a file before its transaction (so a slow client holds no database resource): the
    // test sees it arriving there, breaks the connection off, and finds neither the file nor anything in the database.
    [Fact]
    public async Task An_upload_the_client_abandons_halfway_leaves_no_document_and_no_item()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text", "ocr"]);
        using (var socket = new TcpClient())
        {
            await socket.ConnectAsync(IPAddress.Loopback, fx.Port);
            var stream = socket.GetStream();
            const int length = 2 * 1024 * 1024;
            var head = $"POST /jobs/{job}/documents?name=half.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
                + $"Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n\r\n";
            await stream.WriteAsync(Encoding.ASCII.GetBytes(head));
            // More than the in-memory probe, so the document is being spooled.
            await stream.WriteAsync(new byte[length / 2]);
            await stream.FlushAsync();
            Assert.True(await EventuallyAsync(() => Task.FromResult(SpooledBytes() > 256 * 1024)), "the upload should be spooling" + Answer(stream));
            socket.Client.LingerState = new LingerOption(true, 0); // reset, as a crashed client would
        }
        Assert.True(await EventuallyAsync(() => Task.FromResult(!Directory.EnumerateFiles(fx.SpoolDirectory).Any())), "the aborted upload's file should be gone");
        Assert.Equal(0, await UncommittedDocumentsAsync(job));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job", new { job }));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM document_content"));
        Assert.Equal(0, await fx.CountAsync("SELECT documents + items_total FROM jobs WHERE id = @job", new { job }));
        // The job is intact and the next upload lands whole.
        Assert.Equal(HttpStatusCode.Created, (await http.UploadRawAsync(job, new byte[1024 * 1024])).StatusCode);
        Assert.Equal(2, await fx.CountAsync("SELECT items_total FROM jobs WHERE id = @job", new { job }));
    }

    private static string Answer(NetworkStream stream)
    {
        if (!stream.DataAvailable)
        {
            return " (no answer yet)";
        }
        var buffer = new byte[2048];
        return " answered: " + Encoding.ASCII.GetString(buffer, 0, stream.Read(buffer));
    }

    private long SpooledBytes() =>
        Directory.Exists(fx.SpoolDirectory) ? Directory.EnumerateFiles(fx.SpoolDirectory).Sum(f => new FileInfo(f).Length) : 0;

    /// <summary>The job's documents as a dirty read sees them: the upload's row shows while its transaction is open.</summary>
    private async Task<long> UncommittedDocumentsAsync(long job)
    {
        await using var c = await fx.DataSource.OpenConnectionAsync();
        await using var tx = await c.BeginTransactionAsync(System.Data.IsolationLevel.ReadUncommitted);
        return await Dapper.SqlMapper.ExecuteScalarAsync<long>(c, "SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }, tx);
    }

    // Up to a minute: the box is shared and can stall for seconds.
    private static Task<bool> EventuallyAsync(Func<Task<bool>> condition) => Eventually.HoldsAsync(condition, TimeSpan.FromMinutes(1));

    [Fact]
    public async Task A_retry_while_the_first_request_still_runs_gets_409()
    {
        var (tenant, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        using var socket = new TcpClient();
        await socket.ConnectAsync(IPAddress.Loopback, fx.Port);
        var stream = socket.GetStream();
        // Headers only: the handler holds the key and waits for the body.
        await stream.WriteAsync(Encoding.ASCII.GetBytes($"POST /jobs/{job}/documents?name=slow.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + $"Authorization: Bearer {key}\r\nIdempotency-Key: slow\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\n"));
        await stream.FlushAsync();
        // The handler holds the key once its record is written, running: only then is a retry one "while it runs".
        await Eventually.UntilAsync(async () => await fx.CountAsync(
            $"SELECT COUNT(*) FROM idempotency WHERE tenant_id = @Id AND idem_key = 'slow' AND state = {KeyStateSql.Running}", new { tenant.Id }) == 1,
            "the first request holds its key", 30);
        using var again = new HttpRequestMessage(HttpMethod.Post, U($"/jobs/{job}/documents?name=slow.txt")) { Content = new StringContent("slow body") };
        again.Headers.TryAddWithoutValidation("Idempotency-Key", "slow");
        using var retry = await http.SendAsync(again);
        await AssertProblemAsync(retry, HttpStatusCode.Conflict);
        await stream.WriteAsync("slow body"u8.ToArray());
        var answer = new byte[4096];
        var n = await stream.ReadAsync(answer);
        Assert.StartsWith("HTTP/1.1 201", Encoding.ASCII.GetString(answer, 0, n), StringComparison.Ordinal);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }
}
