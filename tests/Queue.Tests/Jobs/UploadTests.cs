using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Security.Cryptography;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class UploadTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_raw_upload_adds_one_document_and_an_item_per_task_to_an_open_job()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var id = await http.OpenJobAsync(["text", "ocr", "thumb"]);
        var bytes = Encoding.UTF8.GetBytes("raw document");
        var r = await http.UploadRawAsync(id, bytes, "scan 1.png", "image/png");
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var body = await r.BodyAsync();
        Assert.Equal(3, body.GetProperty("itemsAdded").GetInt64());
        var doc = body.GetProperty("documents")[0];
        Assert.Equal("scan 1.png", doc.GetProperty("name").GetString());
        Assert.Equal(bytes.Length, doc.GetProperty("size").GetInt64());
        Assert.Equal(Convert.ToHexStringLower(SHA256.HashData(bytes)), doc.GetProperty("sha256").GetString());
        var status = await (await http.GetAsync(U($"/jobs/{id}"))).BodyAsync();
        Assert.Equal(1, status.GetProperty("documents").GetInt32());
        Assert.Equal(3, status.GetProperty("items").GetProperty("ready").GetInt64());
        Assert.Equal("open", status.GetProperty("state").GetString());
        Assert.NotEqual(System.Text.Json.JsonValueKind.Null, status.GetProperty("position").ValueKind);
        Assert.Equal(3, await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id = @id", new { id }));
    }

    [Fact]
    public async Task A_multipart_upload_stores_each_file_part_as_a_document()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var id = await http.OpenJobAsync(["text"]);
        using var form = new MultipartFormDataContent();
        var one = new ByteArrayContent("first"u8.ToArray());
        one.Headers.ContentType = MediaTypeHeaderValue.Parse("text/plain");
        form.Add(one, "file", "one.txt");
        var two = new ByteArrayContent(new byte[300 * 1024]); // over the probe: streamed as long data
        two.Headers.ContentType = MediaTypeHeaderValue.Parse("application/octet-stream");
        form.Add(two, "file", "two.bin");
        var r = await http.PostAsync(U($"/jobs/{id}/documents"), form);
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var body = await r.BodyAsync();
        var docs = body.GetProperty("documents").EnumerateArray().ToList();
        Assert.Equal(["one.txt", "two.bin"], docs.Select(d => d.GetProperty("name").GetString()));
        Assert.Equal(300 * 1024, docs[1].GetProperty("size").GetInt64());
        Assert.Equal(Convert.ToHexStringLower(SHA256.HashData(new byte[300 * 1024])), docs[1].GetProperty("sha256").GetString());
        Assert.Equal(2, body.GetProperty("itemsAdded").GetInt64());
        var download = await http.GetAsync(U($"/jobs/{id}/documents/{docs[1].GetProperty("id").GetInt64()}"));
        Assert.Equal(new byte[300 * 1024], await download.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task A_multipart_part_without_a_file_name_gets_400_and_nothing_lands()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var id = await http.OpenJobAsync(["text"]);
        using var form = new MultipartFormDataContent();
        form.Add(new ByteArrayContent("ok"u8.ToArray()), "file", "ok.txt");
        form.Add(new StringContent("stray"), "comment");
        await AssertProblemAsync(await http.PostAsync(U($"/jobs/{id}/documents"), form), HttpStatusCode.BadRequest, "comment");
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @id", new { id }));
    }

    [Fact]
    public async Task A_raw_upload_without_a_name_gets_400()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var id = await http.OpenJobAsync();
        var r = await http.PostAsync(U($"/jobs/{id}/documents"), new ByteArrayContent([1, 2]));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "name");
    }

    [Fact]
    public async Task Uploading_to_a_closed_or_cancelled_job_gets_409_and_changes_nothing()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var closed = (await http.CreateJobAsync(new { name = "closed", documents = new[] { new { name = "a", content = B64("a") } } })).GetProperty("id").GetInt64();
        await AssertProblemAsync(await http.UploadRawAsync(closed, [1]), HttpStatusCode.Conflict);
        var cancelled = await http.OpenJobAsync();
        Assert.Equal(HttpStatusCode.OK, (await http.DeleteAsync(U($"/jobs/{cancelled}"))).StatusCode);
        await AssertProblemAsync(await http.UploadRawAsync(cancelled, [1]), HttpStatusCode.Conflict);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id IN (@closed, @cancelled)", new { closed, cancelled }));
    }
}

public sealed class UploadPartsCapTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_multipart_upload_of_more_than_10000_parts_gets_400_naming_parts_and_stores_nothing()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync();
        using var form = new MultipartFormDataContent();
        for (var i = 0; i <= 10_000; i++)
        {
            form.Add(new ByteArrayContent([]), "file", $"empty-{i}.bin");
        }

        await JobsTestKit.AssertProblemAsync(await http.PostAsync(JobsTestKit.U($"/jobs/{job}/documents"), form), System.Net.HttpStatusCode.BadRequest, "parts");
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }
}
