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
        Assert.Equal(JsonValueKindNull, job.GetProperty("position").ValueKind);
        Assert.Empty(job.GetProperty("created").EnumerateArray());
    }

    private const System.Text.Json.JsonValueKind JsonValueKindNull = System.Text.Json.JsonValueKind.Null;

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
    public async Task A_field_of_the_wrong_type_gets_400_naming_it()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"name":"x","open":"yes"}"""));
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, "open");
    }

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
        Assert.NotEqual(JsonValueKindNull, status.GetProperty("position").ValueKind);
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

    [Fact]
    public async Task Closing_is_harmless_twice_makes_an_empty_job_done_and_gets_409_on_a_cancelled_job()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var id = await http.OpenJobAsync();
        await http.UploadRawAsync(id, [1, 2, 3]);
        var r = await http.PostAsync(U($"/jobs/{id}/close"), null);
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal("closed", (await r.BodyAsync()).GetProperty("state").GetString());
        Assert.Equal(HttpStatusCode.OK, (await http.PostAsync(U($"/jobs/{id}/close"), null)).StatusCode);

        var empty = await http.OpenJobAsync();
        Assert.Equal("done", (await (await http.PostAsync(U($"/jobs/{empty}/close"), null)).BodyAsync()).GetProperty("state").GetString());

        var cancelled = await http.OpenJobAsync();
        await http.DeleteAsync(U($"/jobs/{cancelled}"));
        await AssertProblemAsync(await http.PostAsync(U($"/jobs/{cancelled}/close"), null), HttpStatusCode.Conflict);
    }

    [Fact]
    public async Task Cancelling_turns_ready_items_cancelled_removes_the_lanes_and_a_second_cancel_changes_nothing()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.CreateJobAsync(new
        {
            name = "to-cancel",
            tasks = new[] { "text" },
            documents = new[] { new { name = "a", content = B64("a") }, new { name = "b", content = B64("b") }, new { name = "c", content = B64("c") } },
        });
        var id = job.GetProperty("id").GetInt64();
        // One item is out on a live lease: it is not cancelled and may still complete.
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await Dapper.SqlMapper.ExecuteAsync(conn,
                "UPDATE items SET state = 1, due_at = @Until, attempts = 1 WHERE job_id = @id ORDER BY id LIMIT 1",
                new { id, Until = DateTime.UtcNow.AddMinutes(5) });
        }
        var r = await http.DeleteAsync(U($"/jobs/{id}"));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var status = await r.BodyAsync();
        Assert.Equal("cancelled", status.GetProperty("state").GetString());
        Assert.Equal(2, status.GetProperty("items").GetProperty("cancelled").GetInt64());
        Assert.Equal(1, status.GetProperty("items").GetProperty("leased").GetInt64());
        Assert.Equal(0, status.GetProperty("items").GetProperty("ready").GetInt64());
        Assert.Equal(JsonValueKindNull, status.GetProperty("position").ValueKind);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM ordering WHERE job_id = @id", new { id }));
        Assert.Equal(2, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @id AND state = 4", new { id }));

        var again = await http.DeleteAsync(U($"/jobs/{id}"));
        Assert.Equal(HttpStatusCode.OK, again.StatusCode);
        Assert.Equal(2, (await again.BodyAsync()).GetProperty("items").GetProperty("cancelled").GetInt64());
    }

    [Fact]
    public async Task Jobs_are_paged_newest_first_by_cursor_and_filtered_by_state()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var ids = new List<long>();
        for (var i = 0; i < 5; i++)
        {
            ids.Add(await http.OpenJobAsync());
        }
        await http.PostAsync(U($"/jobs/{ids[1]}/close"), null);
        var seen = new List<long>();
        string? next = null;
        do
        {
            var page = await (await http.GetAsync(U("/jobs?limit=2" + (next is null ? "" : "&after=" + next)))).BodyAsync();
            seen.AddRange(page.GetProperty("jobs").EnumerateArray().Select(j => j.GetProperty("id").GetInt64()));
            next = page.GetProperty("next").GetString();
        }
        while (next is not null);
        Assert.Equal(ids.AsEnumerable().Reverse(), seen);
        var done = await (await http.GetAsync(U("/jobs?state=done"))).BodyAsync();
        Assert.Equal([ids[1]], done.GetProperty("jobs").EnumerateArray().Select(j => j.GetProperty("id").GetInt64()));
        Assert.Equal(JsonValueKindNull, done.GetProperty("next").ValueKind);
    }

    [Theory]
    [InlineData("/jobs?limit=0", "limit")]
    [InlineData("/jobs?limit=501", "limit")]
    [InlineData("/jobs?limit=ten", "limit")]
    [InlineData("/jobs?state=finished", "state")]
    [InlineData("/jobs?after=not-a-cursor", "after")]
    public async Task Bad_paging_parameters_get_400_and_are_never_clamped(string url, string field)
    {
        var (_, key) = await fx.NewCustomerAsync();
        await AssertProblemAsync(await fx.Api.ClientWithKey(key).GetAsync(U(url)), HttpStatusCode.BadRequest, field);
    }

    [Fact]
    public async Task Documents_are_listed_in_id_order_with_cursors_and_downloaded_with_their_content_type()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.CreateJobAsync(new
        {
            name = "docs",
            documents = Enumerable.Range(0, 3).Select(i => new { name = $"d{i}.json", contentType = "application/json", content = B64($"{{\"n\":{i}}}") }).ToArray(),
        });
        var id = job.GetProperty("id").GetInt64();
        var first = await (await http.GetAsync(U($"/jobs/{id}/documents?limit=2"))).BodyAsync();
        var docs = first.GetProperty("documents").EnumerateArray().ToList();
        Assert.Equal(["d0.json", "d1.json"], docs.Select(d => d.GetProperty("name").GetString()));
        Assert.Equal("application/json", docs[0].GetProperty("contentType").GetString());
        Assert.True(docs[0].TryGetProperty("createdAt", out _));
        var second = await (await http.GetAsync(U($"/jobs/{id}/documents?limit=2&after={first.GetProperty("next").GetString()}"))).BodyAsync();
        Assert.Equal(["d2.json"], second.GetProperty("documents").EnumerateArray().Select(d => d.GetProperty("name").GetString()));
        Assert.Equal(JsonValueKindNull, second.GetProperty("next").ValueKind);

        var r = await http.GetAsync(U($"/jobs/{id}/documents/{docs[1].GetProperty("id").GetInt64()}"));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        Assert.Equal("application/json", r.Content.Headers.ContentType?.MediaType);
        Assert.Equal("{\"n\":1}", await r.Content.ReadAsStringAsync());
    }

    [Fact]
    public async Task Items_are_listed_in_id_order_filtered_by_state_with_their_last_error()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.CreateJobAsync(new
        {
            name = "items",
            tasks = new[] { "a", "b" },
            documents = new[] { new { name = "x", content = B64("x") }, new { name = "y", content = B64("y") } },
        });
        var id = job.GetProperty("id").GetInt64();
        await using (var conn = await fx.DataSource.OpenConnectionAsync())
        {
            await Dapper.SqlMapper.ExecuteAsync(conn,
                "UPDATE items SET state = 3, attempts = 5, last_error = 'boom' WHERE job_id = @id ORDER BY id DESC LIMIT 1", new { id });
        }
        var all = await (await http.GetAsync(U($"/jobs/{id}/items?limit=3"))).BodyAsync();
        var rows = all.GetProperty("items").EnumerateArray().ToList();
        Assert.Equal(3, rows.Count);
        Assert.True(rows.Select(r => r.GetProperty("id").GetInt64()).SequenceEqual(rows.Select(r => r.GetProperty("id").GetInt64()).Order()));
        Assert.Equal(["a", "b", "a"], rows.Select(r => r.GetProperty("task").GetString()));
        Assert.Equal(JsonValueKindNull, rows[0].GetProperty("lastError").ValueKind);
        var rest = await (await http.GetAsync(U($"/jobs/{id}/items?limit=3&after={all.GetProperty("next").GetString()}"))).BodyAsync();
        var last = Assert.Single(rest.GetProperty("items").EnumerateArray());
        Assert.Equal("dead", last.GetProperty("state").GetString());
        var dead = await (await http.GetAsync(U($"/jobs/{id}/items?state=dead"))).BodyAsync();
        var d = Assert.Single(dead.GetProperty("items").EnumerateArray());
        Assert.Equal("boom", d.GetProperty("lastError").GetString());
        Assert.Equal(5, d.GetProperty("attempts").GetInt32());
        Assert.True(d.GetProperty("documentId").GetInt64() > 0);
        await AssertProblemAsync(await http.GetAsync(U($"/jobs/{id}/items?state=gone")), HttpStatusCode.BadRequest, "state");
    }

    [Fact]
    public async Task Another_tenants_job_and_documents_are_404_everywhere_and_change_nothing()
    {
        var (_, ownerKey) = await fx.NewCustomerAsync();
        var (_, otherKey) = await fx.NewCustomerAsync();
        var owner = fx.Api.ClientWithKey(ownerKey);
        var other = fx.Api.ClientWithKey(otherKey);
        var job = await owner.CreateJobAsync(new { name = "secret", open = true, documents = new[] { new { name = "s", content = B64("secret bytes") } } });
        var id = job.GetProperty("id").GetInt64();
        var doc = job.GetProperty("created")[0].GetProperty("id").GetInt64();
        foreach (var r in new[]
        {
            await other.GetAsync(U($"/jobs/{id}")),
            await other.GetAsync(U($"/jobs/{id}/documents")),
            await other.GetAsync(U($"/jobs/{id}/documents/{doc}")),
            await other.GetAsync(U($"/jobs/{id}/items")),
            await other.PostAsync(U($"/jobs/{id}/close"), null),
            await other.DeleteAsync(U($"/jobs/{id}")),
            await other.UploadRawAsync(id, [1]),
            await other.GetAsync(U($"/jobs/{id + 1000}")),
        })
        {
            await AssertProblemAsync(r, HttpStatusCode.NotFound);
            Assert.DoesNotContain("secret", await r.Content.ReadAsStringAsync(), StringComparison.Ordinal);
        }
        Assert.Empty((await (await other.GetAsync(U("/jobs"))).BodyAsync()).GetProperty("jobs").EnumerateArray());
        var mine = await (await owner.GetAsync(U($"/jobs/{id}"))).BodyAsync();
        Assert.Equal("open", mine.GetProperty("state").GetString());
        Assert.Equal(1, mine.GetProperty("documents").GetInt32());
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
