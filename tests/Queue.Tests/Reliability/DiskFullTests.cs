using System.Diagnostics;
using System.Net;
using System.Net.Http.Headers;
using Dapper;
using MySqlConnector;
using Queue.Core.Data;
using Queue.Local;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Reliability;

/// <summary>
/// Required reliability test 19: the database's disk fills up during uploads (its data directory on a 400 MB tmpfs,
/// filled with a file). Uploads get a clear 5xx with Retry-After, never a 500, and nothing is half-written. MariaDB
/// 10.11 here logs that it cannot grow the tablespace and then aborts (the Api answers 503: the database is
/// unavailable); where it refuses the statement instead (error 1114 or 1021) the Api answers 507. Once space returns
/// and the database is started again on the same port, the same Api process takes uploads again.
/// </summary>
[TakesAbout(18)]
public sealed class DiskFullTests
{
    [Fact]
    public async Task Uploads_on_a_full_disk_get_a_clear_5xx_store_nothing_in_part_and_land_again_once_space_returns()
    {
        var mount = Path.Combine(Path.GetTempPath(), "queue-full-" + Guid.NewGuid().ToString("N")[..12]);
        Directory.CreateDirectory(mount);
        await RunAsync("mount", "-t", "tmpfs", "-o", "size=400M", "tmpfs", mount);
        var filler = Path.Combine(mount, "filler");
        var port = PrivateMariaDb.FreePort();
        string[] small = ["--innodb-log-file-size=16M", "--innodb-buffer-pool-size=64M"];
        PrivateMariaDb? server = null;
        try
        {
            server = await PrivateMariaDb.StartInDirectoryAsync(Path.Combine(mount, "db"), port, small);
            var cs = await server.CreateDatabaseAsync("full");
            await using var own = await OwnDatabase.PrepareAsync(cs, "full", "text");
            var (db, key) = (own.Source, own.CustomerKey);
            await using var api = ServiceProcess.Start("Queue.Api", cs);
            await api.WaitHealthyAsync();
            using var http = new HttpClient { BaseAddress = new Uri(api.Url), Timeout = TimeSpan.FromSeconds(60) };
            http.DefaultRequestHeaders.Authorization = new("Bearer", key);
            var job = await CreateOpenJobAsync(http);
            Assert.Equal(HttpStatusCode.Created, (await UploadAsync(http, job, 0)).Status);

            // Leave about 4 MB: a few 1 MiB uploads fit, then the disk is full.
            await using (var fill = new FileStream(filler, FileMode.CreateNew))
            {
                fill.SetLength(Math.Max(0, new DriveInfo(mount).AvailableFreeSpace - (4L << 20)));
                await fill.WriteAsync(new byte[1]);
            }
            await using (var f = File.OpenWrite(filler))
            {
                var block = new byte[1 << 20];
                for (var i = 0; i < 1000 && new DriveInfo(mount).AvailableFreeSpace > (4L << 20); i++)
                {
                    await f.WriteAsync(block);
                }
            }
            var answers = new List<(HttpStatusCode Status, string Body, bool RetryAfter)>();
            for (var n = 1; n <= 30 && !answers.Any(a => a.Status is HttpStatusCode.ServiceUnavailable || (a.Status == HttpStatusCode.InsufficientStorage && n > 3)); n++)
            {
                answers.Add(await UploadAsync(http, job, n));
            }
            Assert.True(answers.Any(a => (int)a.Status >= 500), "the disk never filled: " + string.Join(", ", answers.Select(a => (int)a.Status)));
            Assert.All(answers.Where(a => (int)a.Status >= 500), a => Assert.True(
                a.Status is HttpStatusCode.InsufficientStorage or HttpStatusCode.ServiceUnavailable && a.RetryAfter && a.Body.Contains("\"detail\"", StringComparison.Ordinal),
                $"a full disk answered {(int)a.Status}: {a.Body}"));

            File.Delete(filler);
            if (!await server.AnswersAsync())
            {
                await server.DisposeAsync();
                server = await PrivateMariaDb.StartInDirectoryAsync(Path.Combine(mount, "db"), port, small);
            }
            await AssertWholeAsync(db, job);
            await Eventually.UntilAsync(async () => (await UploadAsync(http, job, 99)).Status == HttpStatusCode.Created,
                "an upload lands again once space returns", seconds: 30);
            await AssertWholeAsync(db, job);
        }
        finally
        {
            if (server is not null)
            {
                await server.DisposeAsync();
            }
            File.Delete(filler);
            await RunAsync("umount", "-l", mount);
            Directory.Delete(mount, recursive: true);
        }
    }

    /// <summary>The job's counters, its document rows, their bytes and their items all agree: no upload landed in part.</summary>
    private static async Task AssertWholeAsync(MySqlDataSource db, long job)
    {
        await using var conn = await db.OpenConnectionAsync();
        var (documents, itemsTotal, rows, contents, items) = await conn.QuerySingleAsync<(long, long, long, long, long)>("""
            SELECT j.documents, j.items_total,
                   (SELECT COUNT(*) FROM documents d WHERE d.job_id = j.id),
                   (SELECT COUNT(*) FROM documents d JOIN document_content c ON c.document_id = d.id WHERE d.job_id = j.id),
                   (SELECT COUNT(*) FROM items i WHERE i.job_id = j.id)
            FROM jobs j WHERE j.id = @job
            """, new { job });
        Assert.Equal((documents, documents, documents, documents), (itemsTotal, rows, contents, items));
    }

    private static async Task<long> CreateOpenJobAsync(HttpClient http)
    {
        using var r = await http.PostAsync("/jobs", new StringContent("{\"name\":\"filling\",\"open\":true}", System.Text.Encoding.UTF8, "application/json"));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        return System.Text.Json.JsonDocument.Parse(await r.Content.ReadAsStringAsync()).RootElement.GetProperty("id").GetInt64();
    }

    private static async Task<(HttpStatusCode Status, string Body, bool RetryAfter)> UploadAsync(HttpClient http, long job, int n)
    {
        var bytes = new byte[1 << 20];
        Random.Shared.NextBytes(bytes); // incompressible, so each upload really takes its megabyte
        using var content = new ByteArrayContent(bytes);
        content.Headers.ContentType = new MediaTypeHeaderValue("application/octet-stream");
        using var r = await http.PostAsync($"/jobs/{job}/documents?name=d{n}.bin", content);
        return (r.StatusCode, await r.Content.ReadAsStringAsync(), r.Headers.RetryAfter is not null);
    }

    private static async Task RunAsync(string file, params string[] args)
    {
        using var p = Process.Start(new ProcessStartInfo(file, args) { RedirectStandardError = true })!;
        var error = await p.StandardError.ReadToEndAsync();
        await p.WaitForExitAsync();
        Assert.True(p.ExitCode == 0, $"{file} {string.Join(' ', args)} failed: {error}");
    }
}
