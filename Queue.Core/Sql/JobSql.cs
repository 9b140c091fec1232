namespace Queue.Core.Sql;

/// <summary>Jobs, documents and items as customers create and read them. See docs/DESIGN.md "Submission" and "Counters".</summary>
public static class JobSql
{
    /// <summary>
    /// Whether a group of new jobs committed, asked after its COMMIT got no answer (CommitCheck): its first job's row,
    /// read with a lock so that a transaction still committing or rolling back is waited for (PRIMARY). The row must be
    /// that job's, its tenant and name too, not only its id: after the database crashed, InnoDB hands out again the ids
    /// of inserts it lost, so another job can hold the id by the time the check reads it. The 1-minute CI soak answered
    /// 201 with such an id once, for a job that was not in the database (2026-12-07).
    /// </summary>
    public const string JobLanded = "SELECT id FROM jobs WHERE id = @Id AND tenant_id = @TenantId AND name = @Name LOCK IN SHARE MODE";

    /// <summary>The same for a group of uploads: its first document's row, by its id and name (PRIMARY).</summary>
    public const string DocumentLanded = "SELECT id FROM documents WHERE id = @Id AND name = @Name LOCK IN SHARE MODE";

    /// <summary>A job's documents from one on, for the answer to a retry of the keyed POST /jobs or upload that made them (ix_documents_job).</summary>
    public const string FirstDocuments = """
        SELECT id AS Id, name AS Name, size AS Size, sha256 AS Sha256 FROM documents WHERE job_id = @JobId AND id >= @From ORDER BY id LIMIT @Max
        """;

    public const string InsertJob = $"""
        INSERT INTO jobs (tenant_id, name, state, tasks, created_at, updated_at)
        VALUES (@TenantId, @Name, {JobStateSql.Open}, @Tasks, @Now, @Now);
        SELECT LAST_INSERT_ID();
        """;

    /// <summary>
    /// A new job's row with its final counters and state, written once: its documents and items are known before the
    /// row exists, so no UPDATE of the row (and no move in ix_jobs_tenant_state and ix_jobs_state_finished) follows.
    /// </summary>
    public const string InsertNewJob = """
        INSERT INTO jobs (tenant_id, name, state, tasks, documents, items_total, closed_at, finished_at, created_at, updated_at)
        VALUES (@TenantId, @Name, @State, @Tasks, @Documents, @Items, @ClosedAt, @FinishedAt, @Now, @Now)
        """;

    /// <summary>The id a row insert just made, read in the same batch (job rows, a lone document, grouped uploads).</summary>
    public const string LastInsertId = "SELECT LAST_INSERT_ID()";

    /// <summary>The tenant check and state check before an upload reads any byte of the body.</summary>
    public const string JobForUpload = """
        SELECT id AS Id, state AS State, tasks AS Tasks FROM jobs WHERE id = @JobId AND tenant_id = @TenantId
        """;

    /// <summary>
    /// A grouped upload's jobs that are still open, locked in id order (PRIMARY) so concurrent groups cannot deadlock
    /// on each other's job rows; the tenant was checked before the upload was queued.
    /// </summary>
    public const string LockOpenJobsForUpload = $"SELECT id FROM jobs WHERE id IN @Ids AND state = {JobStateSql.Open} ORDER BY id FOR UPDATE";

    /// <summary>The tasks of an upload as rows, in the job's order, so one statement fans a document out into items.</summary>
    private const string TaskRows = "JSON_TABLE(@Tasks, '$[*]' COLUMNS (ord FOR ORDINALITY, task VARCHAR(32) PATH '$')) t";

    /// <summary>
    /// A document whose bytes are already in hand (small raw uploads): row, bytes and one item per task in one round trip.
    /// The user variable carries the new id between the statements, whatever the auto-increment lock mode.
    /// </summary>
    public const string InsertSmallDocument = $"""
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
        VALUES (@JobId, @TenantId, @Name, @ContentType, @Size, @Sha256, @Now);
        SET @queue_document_id = LAST_INSERT_ID();
        INSERT INTO document_content (document_id, content) VALUES (@queue_document_id, @Content);
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT @JobId, @queue_document_id, t.task, {ItemStateSql.Ready}, @Now, @Now, @Now FROM
        """ + " " + TaskRows + """
         ORDER BY t.ord;
        SELECT @queue_document_id;
        """;

    // ---- A new job's lone inline document: three plain statements in the creating batch, chained by LAST_INSERT_ID()
    // (the document's id until the items insert, since document_content has no auto-increment column).

    public const string InsertOneDocument = """
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
        VALUES (@JobId, @TenantId, @Name, @ContentType, @Size, @Sha256, @Now)
        """;

    public const string InsertOneContent = "INSERT INTO document_content (document_id, content) VALUES (LAST_INSERT_ID(), @Content)";

    /// <summary>The one item of a lone document with one task (the commonest job): plain VALUES, no task list to shred.</summary>
    public const string InsertOneDocumentItem = $"""
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        VALUES (@JobId, LAST_INSERT_ID(), @Task, {ItemStateSql.Ready}, @Now, @Now, @Now)
        """;

    public const string InsertOneDocumentItems = $"""
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT @JobId, LAST_INSERT_ID(), t.task, {ItemStateSql.Ready}, @Now, @Now, @Now FROM
        """ + " " + TaskRows + """
         ORDER BY t.ord
        """;

    /// <summary>
    /// Every inline document row of a new job in one multi-row VALUES, the n-th row's parameters numbered n
    /// (<c>@n0, @t0, @s0, @h0</c>: name, content type, size, SHA-256). Rows go in in that order, so their ids rise in that
    /// order too (whatever the auto-increment lock mode), which <see cref="InsertInlineContents"/> relies on.
    /// Plain VALUES cost the server a third less than the JSON_TABLE they replace (docs/DESIGN.md "Grouped submissions").
    /// </summary>
    public static string InsertInlineDocuments(int count) => SqlRows.Values("""
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at) VALUES
        """, "(@JobId, @TenantId, @n#, @t#, @s#, @h#, @Now)", count, "");

    /// <summary>
    /// The bytes of those documents, one binary parameter per document (<c>@c0, @c1, ...</c>) in the same order: the n-th
    /// lowest document id of the (new, so wholly ours) job from the first id the document insert just made
    /// (LAST_INSERT_ID(), so it must come right after that insert) gets the n-th. Rides ix_documents_job. Binary rows cost
    /// the server a quarter of what a base64 JSON array decoded by JSON_TABLE and FROM_BASE64 did. ELT picks each row's
    /// bytes by its row number because a table of <c>VALUES (1, @c0), ...</c> gets its column types when the statement
    /// is prepared, before the parameters have values, and a prepared one stored every document empty.
    /// </summary>
    public static string InsertInlineContents(int count) => $"""
        INSERT INTO document_content (document_id, content)
        SELECT d.id, ELT(d.rn, {SqlRows.Join("@c#", count, ", ")})
        FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS rn FROM documents WHERE job_id = @JobId AND id >= LAST_INSERT_ID()) d
        """;

    /// <summary>One item per task for every document of a job that is still being created in this transaction.</summary>
    public const string InsertItemsForNewJob = $"""
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT d.job_id, d.id, t.task, {ItemStateSql.Ready}, @Now, @Now, @Now
        FROM documents d CROSS JOIN
        """ + " " + TaskRows + """

        WHERE d.job_id = @JobId
        ORDER BY d.id, t.ord
        """;

    /// <summary>
    /// A new job's items reserved, in its creating transaction, for this process's claim-ahead buffer, as
    /// <see cref="ClaimSql.ReserveItems"/> reserves a claim's (state 1, a token, lease_expires_at NULL, due_at the
    /// reservation's end): ix_items_job_state's job_id prefix. RANDOM_BYTES is MariaDB's secure generator, a token as
    /// unguessable as the Api's own. docs/DESIGN.md "New work straight into the buffer".
    /// </summary>
    public const string ReserveNewJobItems = $"""
        UPDATE items SET state = {ItemStateSql.Leased}, lease_token = RANDOM_BYTES(16), due_at = @Until, updated_at = @Now
        WHERE job_id = @JobId
        """;

    /// <summary>
    /// The lanes of that job hidden until the reservation ends, as a claim's closing hides the lanes it emptied
    /// (PRIMARY's job_id prefix; the lanes are this transaction's own new rows, so no rewrite holds them): claims then
    /// neither probe them nor count the tenant as waiting in the database. A give-back lowers the hint again
    /// (<see cref="ClaimSql.LowerLaneHint"/>).
    /// </summary>
    public const string HideNewJobLanes = "UPDATE ordering SET available_at = @Until WHERE job_id = @JobId";

    /// <summary>
    /// The items <see cref="ReserveNewJobItems"/> reserved, with their tokens (ix_items_job_list, forced: with the
    /// statistics of a table that had just grown, the optimizer walked PRIMARY in id order instead, to spare a sort of
    /// ten rows; the slow log of a fairness bench showed 1,410-4,610 rows examined for a 10-item job).
    /// </summary>
    public const string ReservedNewJobItems = """
        SELECT id AS Id, document_id AS DocumentId, task AS Task, lease_token AS Token FROM items FORCE INDEX (ix_items_job_list) WHERE job_id = @JobId ORDER BY id
        """;

    /// <summary>A new job's document ids, in insert order (ix_documents_job): the answer pairs them with the request's documents.</summary>
    public const string CreatedDocumentIds = "SELECT id FROM documents WHERE job_id = @JobId ORDER BY id";

    /// <summary>A streamed document: the row first (size and hash follow when the last byte has arrived).</summary>
    public const string InsertDocumentHeader = """
        INSERT INTO documents (job_id, tenant_id, name, content_type, size, sha256, created_at)
        VALUES (@JobId, @TenantId, @Name, @ContentType, 0, @Sha256, @Now);
        SELECT LAST_INSERT_ID();
        """;

    /// <summary>Run as a prepared statement with a Stream value: MySqlConnector sends it with COM_STMT_SEND_LONG_DATA.</summary>
    public const string InsertStreamedContent = "INSERT INTO document_content (document_id, content) VALUES (@DocumentId, @Content)";

    public const string FinishStreamedDocument = $"""
        UPDATE documents SET size = @Size, sha256 = @Sha256 WHERE id = @DocumentId;
        INSERT INTO items (job_id, document_id, task, state, due_at, created_at, updated_at)
        SELECT @JobId, @DocumentId, t.task, {ItemStateSql.Ready}, @Now, @Now, @Now FROM
        """ + " " + TaskRows + """
         ORDER BY t.ord
        """;

    /// <summary>
    /// Counts an upload into the job, closing it when asked. Only an open job takes documents: a job closed or cancelled
    /// while the bytes streamed matches no row, and the whole upload is rolled back. MariaDB assigns left to right,
    /// so the state sees the new counters.
    /// </summary>
    public const string AddToJob = $"""
        UPDATE jobs SET
          documents = documents + @Documents,
          items_total = items_total + @Items,
          finished_at = IF(@Close = 1 AND items_total - items_done - items_dead - items_cancelled = 0, @Now, finished_at),
          closed_at = IF(@Close = 1, @Now, closed_at),
          state = IF(@Close = 1, IF(items_total - items_done - items_dead - items_cancelled = 0, {JobStateSql.Done}, {JobStateSql.Closed}), state),
          updated_at = @Now
        WHERE id = @JobId AND state = {JobStateSql.Open}
        """;

    /// <summary>
    /// A group of uploads' counters, one statement for every job of the group (<c>@j</c>k its id, <c>@d</c>k its new
    /// documents, <c>@n</c>k its new items; PRIMARY): an <see cref="AddToJob"/> per upload cost the server a statement
    /// each. The group holds the jobs' row locks and found them open (<see cref="LockOpenJobsForUpload"/>).
    /// </summary>
    public static string AddToJobs(int count) => $"""
        UPDATE jobs
        SET documents = documents + CASE id {SqlRows.Join("WHEN @j# THEN @d#", count, " ")} ELSE 0 END,
            items_total = items_total + CASE id {SqlRows.Join("WHEN @j# THEN @n#", count, " ")} ELSE 0 END,
            updated_at = @Now
        WHERE id IN ({SqlRows.Join("@j#", count, ", ")}) AND state = {JobStateSql.Open}
        """;

    /// <summary>Closing a job with nothing left to do makes it done at once.</summary>
    public const string CloseJob = $"""
        UPDATE jobs SET
          finished_at = IF(items_total - items_done - items_dead - items_cancelled = 0, @Now, NULL),
          closed_at = @Now,
          state = IF(items_total - items_done - items_dead - items_cancelled = 0, {JobStateSql.Done}, {JobStateSql.Closed}),
          updated_at = @Now
        WHERE id = @JobId AND tenant_id = @TenantId AND state = {JobStateSql.Open}
        """;

    public const string CancelJob = $"""
        UPDATE jobs SET state = {JobStateSql.Cancelled}, finished_at = @Now, updated_at = @Now
        WHERE id = @JobId AND tenant_id = @TenantId AND state IN ({JobStateSql.Open}, {JobStateSql.Closed})
        """;

    /// <summary>Ready items, and leases already expired (which count as ready), are cancelled; live leases may still finish.</summary>
    public const string CancelReadyItems = $"""
        UPDATE items SET state = {ItemStateSql.Cancelled}, lease_token = NULL, lease_expires_at = NULL, updated_at = @Now
        WHERE job_id = @JobId AND state IN ({ItemStateSql.Ready}, {ItemStateSql.Leased}) AND (state = {ItemStateSql.Ready} OR due_at <= @Now)
        """;

    public const string AddCancelled = "UPDATE jobs SET items_cancelled = items_cancelled + @Count, updated_at = @Now WHERE id = @JobId";

    public const string JobColumns = """
        id AS Id, tenant_id AS TenantId, name AS Name, state AS State, tasks AS Tasks, blocked AS Blocked,
        documents AS Documents, items_total AS ItemsTotal, items_done AS ItemsDone, items_dead AS ItemsDead,
        items_cancelled AS ItemsCancelled, created_at AS CreatedAt, closed_at AS ClosedAt, finished_at AS FinishedAt
        """;

    public const string JobOfTenant = "SELECT " + JobColumns + " FROM jobs WHERE id = @JobId AND tenant_id = @TenantId";

    /// <summary>For technicians (Admin UI), who see every tenant.</summary>
    public const string JobById = "SELECT " + JobColumns + " FROM jobs WHERE id = @JobId";

    /// <summary>Newest first, ties by id descending; the cursor is the last row's (created_at, id).</summary>
    public const string JobsPage = "SELECT " + JobColumns + """
         FROM jobs
        WHERE tenant_id = @TenantId AND (created_at < @AfterCreated OR (created_at = @AfterCreated AND id < @AfterId))
        ORDER BY created_at DESC, id DESC LIMIT @Limit
        """;

    public const string JobsPageInState = "SELECT " + JobColumns + """
         FROM jobs
        WHERE tenant_id = @TenantId AND state = @State
          AND (created_at < @AfterCreated OR (created_at = @AfterCreated AND id < @AfterId))
        ORDER BY created_at DESC, id DESC LIMIT @Limit
        """;

    /// <summary>Live leases of one job, counted on ix_items_job_state without touching ready items.</summary>
    public const string LiveLeases = $"SELECT COUNT(*) FROM items WHERE job_id = @JobId AND state = {ItemStateSql.Leased} AND due_at > @Now";

    /// <summary>
    /// The job's lanes (ordering's PRIMARY, job_id first): every lane carries the job's value, mode and blocked flag.
    /// Claimable: a lane neither blocked nor hidden. For the status and the explanation (<see cref="Jobs.JobLanesRow"/>).
    /// </summary>
    public const string JobLanes = """
        SELECT COUNT(*) AS Lanes, MIN(value) AS Value, MIN(mode) AS Mode, MAX(blocked) AS Blocked,
               MIN(IF(available_at <= @Now, 1, 0)) AS AllWaiting, MAX(IF(available_at <= @Now, 1, 0)) AS AnyClaimable,
               MAX(IF(blocked = 0 AND available_at <= @Now, 1, 0)) AS Claimable
        FROM ordering WHERE job_id = @JobId
        """;

    /// <summary>Everything a status read needs about one job in one round trip: the row, its live leases and its lanes.
    /// The position comes after, and only for a job of the tenant (QueuePosition: capped count or index dive).</summary>
    public const string StatusOfTenant = JobOfTenant + ";\n" + LiveLeases + ";\n" + JobLanes;

    public const string DocumentsPage = """
        SELECT id AS Id, name AS Name, content_type AS ContentType, size AS Size, sha256 AS Sha256, created_at AS CreatedAt
        FROM documents WHERE job_id = @JobId AND id > @After ORDER BY id LIMIT @Limit
        """;

    public const string DocumentOfJob = """
        SELECT id AS Id, name AS Name, content_type AS ContentType, size AS Size, sha256 AS Sha256, created_at AS CreatedAt
        FROM documents WHERE id = @DocumentId AND job_id = @JobId AND tenant_id = @TenantId
        """;

    /// <summary>One slice of a document's bytes (1-based offset), so a download never holds a whole document.</summary>
    public const string ContentSlice = "SELECT SUBSTRING(content, @Offset, @Length) FROM document_content WHERE document_id = @DocumentId";

    private const string ItemColumns = """
        id AS Id, document_id AS DocumentId, task AS Task, state AS State, attempts AS Attempts, last_error AS LastError,
        updated_at AS UpdatedAt
        """;

    public const string ItemsPageInState = "SELECT " + ItemColumns + """
         FROM items WHERE job_id = @JobId AND state = @State AND id > @After ORDER BY id LIMIT @Limit
        """;

    /// <summary>All states: five short ranges of ix_items_job_list merged, instead of sorting the job's items.</summary>
    public const string ItemsPage = "SELECT * FROM ("
        + "(SELECT " + ItemColumns + $" FROM items WHERE job_id = @JobId AND state = {ItemStateSql.Ready} AND id > @After ORDER BY id LIMIT @Limit) UNION ALL "
        + "(SELECT " + ItemColumns + $" FROM items WHERE job_id = @JobId AND state = {ItemStateSql.Leased} AND id > @After ORDER BY id LIMIT @Limit) UNION ALL "
        + "(SELECT " + ItemColumns + $" FROM items WHERE job_id = @JobId AND state = {ItemStateSql.Done} AND id > @After ORDER BY id LIMIT @Limit) UNION ALL "
        + "(SELECT " + ItemColumns + $" FROM items WHERE job_id = @JobId AND state = {ItemStateSql.Dead} AND id > @After ORDER BY id LIMIT @Limit) UNION ALL "
        + "(SELECT " + ItemColumns + $" FROM items WHERE job_id = @JobId AND state = {ItemStateSql.Cancelled} AND id > @After ORDER BY id LIMIT @Limit)"
        + ") x ORDER BY Id LIMIT @Limit";

    /// <summary>Completions of every tenant so far (Api processes add their deltas every few seconds).</summary>
    public const string TotalCompletions = "SELECT CAST(COALESCE(SUM(completions), 0) AS SIGNED) FROM tenant_counters";
}
