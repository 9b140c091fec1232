using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Security.Cryptography;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class SubmissionTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task Creating_a_job_with_inline_documents_answers_201_with_its_location_status_and_stored_documents()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var r = await http.PostAsJsonAsync(U("/jobs"), new
        {
            name = "invoices-2026-11",
            tasks = new[] { "text", "thumbnail" },
            documents = new[]
            {
                new { name = "a.pdf", contentType = "application/pdf", content = B64("hello") },
                new { name = "b.txt", contentType = "text/plain", content = B64("world!") },
            },
        });
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var body = await r.BodyAsync();
        var id = body.GetProperty("id").GetInt64();
        Assert.Equal($"/jobs/{id}", r.Headers.Location?.ToString());
        Assert.Equal("invoices-2026-11", body.GetProperty("name").GetString());
        Assert.Equal("closed", body.GetProperty("state").GetString());
        Assert.Equal(["text", "thumbnail"], body.GetProperty("tasks").EnumerateArray().Select(t => t.GetString()));
        Assert.Equal(2, body.GetProperty("documents").GetInt32());
        var items = body.GetProperty("items");
        Assert.Equal(4, items.GetProperty("total").GetInt64());
        Assert.Equal(4, items.GetProperty("ready").GetInt64());
        foreach (var zero in new[] { "leased", "done", "dead", "cancelled" })
        {
            Assert.Equal(0, items.GetProperty(zero).GetInt64());
        }
        Assert.True(body.GetProperty("createdAt").GetString()!.EndsWith('Z'));
        Assert.True(body.TryGetProperty("eta", out _));
        var created = body.GetProperty("created").EnumerateArray().ToList();
        Assert.Equal(2, created.Count);
        Assert.Equal("a.pdf", created[0].GetProperty("name").GetString());
        Assert.Equal(5, created[0].GetProperty("size").GetInt64());
        Assert.Equal(Convert.ToHexStringLower(SHA256.HashData("hello"u8)), created[0].GetProperty("sha256").GetString());
        Assert.True(created[1].GetProperty("id").GetInt64() > created[0].GetProperty("id").GetInt64());
        Assert.Equal(4, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @id AND state = 0", new { id }));
    }

    [Fact]
    public async Task A_new_job_is_claimable_at_once_with_a_lane_per_task_and_a_provisional_value()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.Api.ClientWithKey(key).CreateJobAsync(new
        {
            name = "claimable",
            tasks = new[] { "text", "ocr" },
            documents = new[] { new { name = "a", content = B64("x") } },
        });
        var id = job.GetProperty("id").GetInt64();
        Assert.Equal(2, await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id = @id AND blocked = 0", new { id }));
        var ordering = job.GetProperty("ordering");
        Assert.Contains(ordering.GetProperty("mode").GetString(), new[] { "smallest", "oldest" });
        Assert.Equal(await fx.CountAsync("SELECT MIN(value) FROM ordering WHERE job_id = @id", new { id }), ordering.GetProperty("value").GetInt64());
        Assert.False(ordering.GetProperty("override").GetBoolean());
        Assert.True(job.GetProperty("position").GetInt64() >= 1);
    }

    [Fact]
    public async Task Tasks_default_to_the_tenants_tasks_and_an_open_job_without_documents_stays_open()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.Api.ClientWithKey(key).CreateJobAsync(new { name = "defaults", open = true });
        Assert.Equal(["text", "thumbnail"], job.GetProperty("tasks").EnumerateArray().Select(t => t.GetString()));
        Assert.Equal("open", job.GetProperty("state").GetString());
        Assert.Equal(System.Text.Json.JsonValueKind.Null, job.GetProperty("position").ValueKind);
        Assert.Empty(job.GetProperty("created").EnumerateArray());
    }

    [Fact]
    public async Task A_closed_job_without_documents_is_done_at_once()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var job = await fx.Api.ClientWithKey(key).CreateJobAsync(new { name = "empty" });
        Assert.Equal("done", job.GetProperty("state").GetString());
    }

    [Theory]
    [InlineData("priority")]
    [InlineData("tenant")]
    [InlineData("state")]
    public async Task An_unknown_property_gets_400_naming_it(string property)
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json($$"""{"name":"x","{{property}}":1}"""));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, property);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'x'"));
    }

    [Fact]
    public async Task An_unknown_property_inside_a_document_gets_400_naming_it()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"name":"x","documents":[{"name":"a","content":"","size":3}]}"""));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "size");
    }

    [Fact]
    public async Task Malformed_json_gets_400()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"name": "x", """));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest);
    }

    [Fact]
    public async Task A_body_that_is_not_json_gets_415()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), new StringContent("name=x", Encoding.UTF8, "application/x-www-form-urlencoded"));
        await AssertProblemAsync(r, HttpStatusCode.UnsupportedMediaType);
    }

    [Fact]
    public async Task Every_bad_field_is_named_in_one_400()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var r = await http.PostAsync(U("/jobs"), Json($$"""
            {"name":"{{new string('n', 201)}}","tasks":["Text","ok"],
             "documents":[{"name":"","content":""},{"name":"b","contentType":"not a type","content":""},{"name":"c"}]}
            """));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "name", "tasks", "documents[0].name", "documents[1].contentType", "documents[2].content");
        await AssertProblemAsync(await http.PostAsync(U("/jobs"), Json("""{"tasks":["a"]}""")), HttpStatusCode.BadRequest, "name");
        await AssertProblemAsync(await http.PostAsync(U("/jobs"), Json("""{"name":"x","tasks":[]}""")), HttpStatusCode.BadRequest, "tasks");
        await AssertProblemAsync(await http.PostAsync(U("/jobs"), Json("""{"name":"x","tasks":["a","a"]}""")), HttpStatusCode.BadRequest, "tasks");
        await AssertProblemAsync(await http.PostAsync(U("/jobs"), Json("""{"name":"x","tasks":["a","b","c","d","e","f"]}""")), HttpStatusCode.BadRequest, "tasks");
        await AssertProblemAsync(await http.PostAsync(U("/jobs"), Json($$"""{"name":"x","tasks":["{{new string('a', 33)}}"]}""")), HttpStatusCode.BadRequest, "tasks");
        await AssertProblemAsync(await http.PostAsync(U("/jobs"), Json($$"""{"name":"x","documents":[{"name":"{{new string('d', 256)}}","content":""}]}""")),
            HttpStatusCode.BadRequest, "documents[0].name");
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'x'"));
    }

    [Fact]
    public async Task Content_that_is_not_base64_gets_400_naming_the_field()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"name":"x","documents":[{"name":"a","content":"!!not base64!!"}]}"""));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "documents[0].content");
    }

    [Fact]
    public async Task Content_that_is_not_base64_is_named_with_the_other_errors_of_its_request()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""
            {"name":"","documents":[{"name":"a","content":"aGVsbG8="},{"name":"b","content":"not base64!"},{"name":"","content":"eA=="}]}
            """));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "name", "documents[1].content", "documents[2].name");
    }

    [Fact]
    public async Task Base64_content_wrapped_over_lines_is_stored_as_its_bytes()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var wrapped = Convert.ToBase64String(Encoding.UTF8.GetBytes(new string('w', 120)), Base64FormattingOptions.InsertLineBreaks)
            .Replace("\r\n", "\n", StringComparison.Ordinal);
        var r = await fx.Api.ClientWithKey(key).PostAsJsonAsync(U("/jobs"), new
        {
            name = "wrapped",
            documents = new[] { new { name = "w.txt", content = wrapped[..40] + "\n" + wrapped[40..] }, new { name = "h.txt", content = B64("hello") } },
        });
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var created = (await r.BodyAsync()).GetProperty("created").EnumerateArray().ToList();
        Assert.Equal(120, created[0].GetProperty("size").GetInt64());
        Assert.Equal(Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(new string('w', 120)))), created[0].GetProperty("sha256").GetString());
        Assert.Equal(Convert.ToHexStringLower(SHA256.HashData("hello"u8)), created[1].GetProperty("sha256").GetString());
    }

    [Fact]
    public async Task A_field_of_the_wrong_type_gets_400_naming_it()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"name":"x","open":"yes"}"""));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "open");
    }

    [Fact]
    public async Task The_endpoints_appear_in_the_openapi_document_with_their_shapes()
    {
        var doc = await (await fx.Api.ClientWithKey(null).GetAsync(U("/openapi/v1.json"))).BodyAsync();
        var paths = doc.GetProperty("paths");
        foreach (var p in new[] { "/jobs", "/jobs/{id}", "/jobs/{id}/close", "/jobs/{id}/documents", "/jobs/{id}/documents/{documentId}", "/jobs/{id}/items" })
        {
            Assert.True(paths.TryGetProperty(p, out _), $"missing {p}");
        }
        var schemas = doc.GetProperty("components").GetProperty("schemas");
        Assert.True(schemas.TryGetProperty("CreateJobRequest", out var request));
        Assert.True(request.GetProperty("properties").TryGetProperty("documents", out _));
        Assert.True(schemas.TryGetProperty("CreatedJobResponse", out _));
        Assert.True(schemas.TryGetProperty("JobStatus", out _));
    }
}
