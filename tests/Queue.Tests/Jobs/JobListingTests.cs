using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Security.Cryptography;
using System.Text;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

public sealed class JobListingTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
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
        Assert.Equal(System.Text.Json.JsonValueKind.Null, done.GetProperty("next").ValueKind);
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
        Assert.Equal(System.Text.Json.JsonValueKind.Null, second.GetProperty("next").ValueKind);

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
        Assert.Equal(System.Text.Json.JsonValueKind.Null, rows[0].GetProperty("lastError").ValueKind);
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
}
