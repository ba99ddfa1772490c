"""Written documents for training and testing the NDA classifier: hard negatives and hard
positives that the Kleister NDAs and the shared corpus do not hold.

The Kleister NDAs are all positives, and the corpus's other files (papers, sheets, slides) are
easy negatives: a classifier tuned on them alone takes any contract that mentions
confidentiality for an NDA. These are documents laid out as public contract templates are
(SEC-filed merger, purchase, credit, employment and lease agreements, SaaS and licence terms,
engagement and offer letters, letters of intent, board minutes, press releases), each with its
confidentiality clause or its reference to a "Confidentiality Agreement", and the NDA forms the
benchmark under-represents (letter agreements with no title, mutual and one-way forms, employee
confidentiality undertakings). Each document has a ``family`` (its kind of document): folds and
the held-out set never split a family, so every figure is on kinds the model never saw.

Deterministic for a seed; training-time only (``training``), never read at run time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["WrittenDocument", "FAMILIES", "written_documents"]


@dataclass(frozen=True)
class WrittenDocument:
    name: str
    family: str
    is_nda: bool
    text: str


_FIRST = ["Alder", "Birch", "Cedar", "Delta", "Ember", "Falcon", "Granite", "Harbor", "Iris",
          "Juniper", "Keystone", "Lumen", "Meridian", "Northwind", "Orchid", "Pinnacle", "Quarry",
          "Redwood", "Summit", "Tidewater", "Upland", "Vantage", "Willow", "Yarrow", "Zenith",
          "Atlas", "Beacon", "Cobalt", "Dunmore", "Evergreen"]
_SECOND = ["Capital", "Holdings", "Technologies", "Partners", "Systems", "Therapeutics",
           "Industries", "Networks", "Logistics", "Foods", "Energy", "Labs", "Media", "Bank",
           "Pharmaceuticals", "Software", "Realty", "Brands", "Analytics", "Devices"]
_SUFFIX = ["Inc.", "Corporation", "LLC", "L.P.", "Ltd.", "Co.", "Incorporated", "Corp."]
_PEOPLE = ["Jane A. Morgan", "Robert Chen", "Maria Alvarez", "David O'Neill", "Priya Natarajan",
           "Thomas Becker", "Laura Whitfield", "Samuel Okafor", "Helen Park", "Marcus Reed",
           "Anna Kowalski", "James Whitmore", "Olivia Grant", "Daniel Ruiz", "Sarah Lindqvist"]
_STATES = ["Delaware", "New York", "California", "Texas", "Illinois", "Massachusetts",
           "Florida", "Washington", "Georgia", "Ohio", "New Jersey", "Colorado", "Nevada"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December"]
_TITLES = ["Chief Executive Officer", "Chief Financial Officer", "General Counsel", "President",
           "Vice President, Corporate Development", "Managing Director", "Secretary"]


class _Writer:
    """Random names, dates and wording for one document."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.parties = [self.company() for _ in range(3)]
        self.person = rng.choice(_PEOPLE)
        self.state = rng.choice(_STATES)
        self.date = self.a_date()

    def company(self) -> str:
        r = self.rng
        return f"{r.choice(_FIRST)} {r.choice(_SECOND)} {r.choice(_SUFFIX)}"

    def a_date(self) -> str:
        r = self.rng
        return f"{r.choice(_MONTHS)} {r.randint(1, 28)}, {r.randint(2003, 2024)}"

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def fill(self, text: str) -> str:
        a, b, c = self.parties
        return (text.replace("{A}", a).replace("{B}", b).replace("{C}", c)
                .replace("{P}", self.person).replace("{S}", self.state)
                .replace("{D}", self.date).replace("{D2}", self.a_date())
                .replace("{T}", self.rng.choice(_TITLES))
                .replace("{N}", str(self.rng.choice([2, 3, 5, 12, 18, 24, 36])))
                .replace("{$}", f"${self.rng.randint(1, 900):,},{self.rng.randint(0, 999):03d},000"))


# --- clauses shared by many agreements ------------------------------------------------------

_BOILERPLATE = {
    "Governing Law": [
        "This Agreement shall be governed by and construed in accordance with the laws of the "
        "State of {S}, without regard to its conflict of laws principles.",
        "All matters arising out of or relating to this Agreement shall be governed by the "
        "internal laws of the State of {S}. Each party submits to the exclusive jurisdiction of "
        "the state and federal courts located in the State of {S}."],
    "Notices": [
        "All notices under this Agreement shall be in writing and shall be deemed given when "
        "delivered personally, one business day after being sent by overnight courier, or when "
        "sent by electronic mail with confirmation of transmission, to the addresses set forth on "
        "the signature page.",
        "Any notice required or permitted hereunder shall be given in writing to the address of "
        "the receiving party stated above, or to such other address as a party may designate by "
        "notice given in accordance with this Section."],
    "Entire Agreement": [
        "This Agreement constitutes the entire agreement between the parties with respect to its "
        "subject matter and supersedes all prior agreements and understandings, oral or written.",
        "This Agreement, together with the exhibits and schedules hereto, contains the entire "
        "understanding of the parties and may be amended only by a written instrument signed by "
        "both parties."],
    "Counterparts": [
        "This Agreement may be executed in counterparts, each of which shall be deemed an "
        "original and all of which together shall constitute one instrument. Signatures "
        "delivered by facsimile or PDF shall be effective."],
    "Severability": [
        "If any provision of this Agreement is held invalid or unenforceable, the remaining "
        "provisions shall remain in full force and effect, and the invalid provision shall be "
        "reformed to the minimum extent necessary to make it enforceable."],
    "Assignment": [
        "Neither party may assign this Agreement without the prior written consent of the other "
        "party, except to a successor in connection with a merger, acquisition or sale of all or "
        "substantially all of its assets.",
        "This Agreement shall bind and benefit the parties and their respective successors and "
        "permitted assigns."],
    "Waiver": [
        "No failure or delay in exercising any right under this Agreement shall operate as a "
        "waiver thereof, nor shall any single or partial exercise preclude any further exercise."],
    "Force Majeure": [
        "Neither party shall be liable for any failure to perform caused by events beyond its "
        "reasonable control, including acts of God, fire, flood, war, terrorism, labor disputes, "
        "epidemics or governmental action."],
    "Dispute Resolution": [
        "Any dispute arising under this Agreement shall be finally resolved by binding "
        "arbitration administered by the American Arbitration Association in accordance with its "
        "Commercial Arbitration Rules, before a single arbitrator seated in {S}."],
}

# How an agreement that is not an NDA speaks of confidentiality: a section among many.
_CONFIDENTIALITY_CLAUSES = [
    "Confidentiality. Each party shall hold the Confidential Information of the other party in "
    "confidence, shall use it only to perform its obligations under this Agreement, and shall not "
    "disclose it to any third party except to its employees and advisors who need to know it and "
    "are bound by obligations of confidentiality at least as protective as these. Confidential "
    "Information does not include information that is or becomes publicly available through no "
    "fault of the receiving party.",
    "Confidentiality. The terms of this Agreement are confidential and shall not be disclosed by "
    "either party except as required by law or to its attorneys, accountants and lenders.",
    "Confidential Information. During the term of this Agreement and for {N} months thereafter, "
    "the receiving party shall protect the disclosing party's confidential information with the "
    "same degree of care it uses for its own, and in no event less than reasonable care.",
    "Confidentiality. The parties acknowledge that the Confidentiality Agreement dated {D2} "
    "between them remains in full force and effect and governs all information exchanged in "
    "connection with this Agreement.",
]


def _sections(w: _Writer, specific: list[tuple[str, list[str]]], confidentiality: bool,
              boilerplate: int) -> list[tuple[str, str]]:
    """The agreement's own sections in order, a confidentiality section among them, then
    boilerplate in a random choice and order."""
    r = w.rng
    chosen = [(head, r.choice(bodies)) for head, bodies in specific]
    if confidentiality:
        clause = r.choice(_CONFIDENTIALITY_CLAUSES)
        head, _, body = clause.partition(". ")
        chosen.insert(r.randint(len(chosen) // 2, len(chosen)), (head, body))
    names = list(_BOILERPLATE)
    r.shuffle(names)
    chosen += [(name, r.choice(_BOILERPLATE[name])) for name in names[:boilerplate]]
    return chosen


def _numbered(w: _Writer, sections: list[tuple[str, str]]) -> str:
    style = w.rng.choice(["Section {i}. {h}.", "{i}. {h}.", "ARTICLE {i}\n{H}", "{i}. {H}"])
    out = []
    for i, (head, body) in enumerate(sections, start=1):
        heading = style.format(i=i, h=head, H=head.upper())
        out.append(f"{heading} {w.fill(body)}" if not style.startswith("ARTICLE")
                   else f"{heading}\n{w.fill(body)}")
    return "\n\n".join(out)


def _signatures(w: _Writer, parties: int = 2) -> str:
    blocks = []
    for name in w.parties[:parties]:
        blocks.append(f"{name.upper()}\n\nBy: ______________________\nName: "
                      f"{w.rng.choice(_PEOPLE)}\nTitle: {w.rng.choice(_TITLES)}")
    lead = w.pick("IN WITNESS WHEREOF, the parties have executed this Agreement as of the date "
                  "first written above.", "IN WITNESS WHEREOF, the parties hereto have caused "
                  "this Agreement to be duly executed by their authorized officers.")
    return lead + "\n\n" + "\n\n".join(blocks)


def _edgar(w: _Writer, exhibit: str) -> str:
    """Half the documents carry an EDGAR exhibit header, as the Kleister NDAs do, so a header is
    no sign of either class."""
    if w.rng.random() < 0.5:
        return ""
    number = f"{exhibit}.{w.rng.randint(1, 40)}"
    sequence, filer = w.rng.randint(2, 9), w.rng.randint(100000, 999999)
    return f"EX-{number} {sequence} d{filer}dex{number.replace('.', '')}.htm\nExhibit {number}\n"


def _agreement(w: _Writer, title: str | None, preamble: str, recitals: list[str],
               specific: list[tuple[str, list[str]]], confidentiality: bool = True,
               exhibit: str = "10") -> str:
    r = w.rng
    parts = [_edgar(w, exhibit)]
    if title:
        parts.append(title.upper() if r.random() < 0.7 else title)
    parts.append(w.fill(preamble))
    if recitals:
        parts.append("RECITALS\n" + "\n".join(f"WHEREAS, {w.fill(x)}" for x in recitals)
                     + "\nNOW, THEREFORE, in consideration of the mutual covenants contained "
                     "herein, the parties agree as follows:")
    parts.append(_numbered(w, _sections(w, specific, confidentiality, r.randint(3, 7))))
    parts.append(_signatures(w))
    return "\n\n".join(p for p in parts if p)


# --- hard negatives: agreements and papers that mention confidentiality ----------------------


def merger_agreement(w: _Writer) -> str:
    specific = [
        ("The Merger", ["Upon the terms and subject to the conditions of this Agreement, at the "
                        "Effective Time, Merger Sub shall be merged with and into the Company, the "
                        "separate corporate existence of Merger Sub shall cease, and the Company "
                        "shall continue as the Surviving Corporation and a wholly owned subsidiary "
                        "of Parent."]),
        ("Effective Time", ["The Merger shall become effective upon the filing of the "
                            "Certificate of Merger with the Secretary of State of the State of "
                            "{S}, or at such later time as is specified therein."]),
        ("Conversion of Shares", ["At the Effective Time, each share of Company Common Stock "
                                  "issued and outstanding immediately prior to the Effective Time "
                                  "shall be converted into the right to receive the Merger "
                                  "Consideration in cash, without interest."]),
        ("Representations and Warranties of the Company", [
            "The Company is a corporation duly organized, validly existing and in good standing "
            "under the laws of the State of {S} and has all requisite corporate power to own its "
            "properties and to carry on its business as now conducted."]),
        ("Conduct of Business Pending the Merger", [
            "From the date of this Agreement until the Effective Time, the Company shall conduct "
            "its business in the ordinary course consistent with past practice and shall not "
            "declare any dividend, issue any shares or incur any indebtedness for borrowed money."]),
        ("Access to Information", [
            "The Company shall afford Parent and its representatives reasonable access during "
            "normal business hours to its properties, books and records. All information obtained "
            "pursuant to this Section shall be held by Parent in accordance with the "
            "Confidentiality Agreement, dated as of {D2}, between Parent and the Company (the "
            "\"Confidentiality Agreement\"), which shall survive any termination of this "
            "Agreement.",
            "Each of the parties shall hold any information furnished under this Section in "
            "confidence as provided in the Confidentiality Agreement."]),
        ("No Solicitation", ["The Company shall not, directly or indirectly, solicit, initiate "
                             "or knowingly encourage any Acquisition Proposal, provided that the "
                             "Company may furnish information to a person making a Superior "
                             "Proposal who has entered into an Acceptable Confidentiality "
                             "Agreement."]),
        ("Conditions to the Obligations of Each Party", [
            "The obligations of each party to effect the Merger are subject to the adoption of "
            "this Agreement by the Company Stockholders, the expiration of any waiting period "
            "under the HSR Act and the absence of any injunction prohibiting the Merger."]),
        ("Termination Fee", ["If this Agreement is terminated in the circumstances described "
                             "above, the Company shall pay Parent a termination fee of {$} by "
                             "wire transfer of immediately available funds."]),
    ]
    title = w.pick("Agreement and Plan of Merger", "Merger Agreement",
                   "Agreement and Plan of Merger and Reorganization")
    preamble = ("This " + title.upper() + " (this \"Agreement\"), dated as of {D}, is entered "
                "into by and among {A} (\"Parent\"), {C}, a wholly owned subsidiary of Parent "
                "(\"Merger Sub\"), and {B} (the \"Company\").")
    return _agreement(w, title, preamble, [
        "the Boards of Directors of Parent, Merger Sub and the Company have approved the merger "
        "of Merger Sub with and into the Company upon the terms set forth herein;",
        "the Board of Directors of the Company has resolved to recommend that the stockholders "
        "of the Company adopt this Agreement;"], specific, confidentiality=False, exhibit="2")


def purchase_agreement(w: _Writer) -> str:
    asset = w.rng.random() < 0.5
    thing = "the Purchased Assets" if asset else "the Shares"
    specific = [
        ("Purchase and Sale", [f"Subject to the terms of this Agreement, at the Closing Seller "
                               f"shall sell to Buyer, and Buyer shall purchase from Seller, all "
                               f"of Seller's right, title and interest in {thing}, free and clear "
                               "of all Encumbrances."]),
        ("Purchase Price", ["The aggregate purchase price shall be {$} (the \"Purchase Price\"), "
                            "subject to adjustment for Closing Working Capital, of which a "
                            "portion shall be deposited with the Escrow Agent."]),
        ("Closing", ["The Closing shall take place at the offices of Buyer's counsel on the "
                     "third business day after all conditions set forth herein are satisfied."]),
        ("Representations and Warranties of Seller", [
            "Seller has good and valid title to " + thing + ", and the financial statements "
            "delivered to Buyer fairly present the financial condition of the Business."]),
        ("Indemnification", ["Seller shall indemnify Buyer against all Losses arising from any "
                             "breach of Seller's representations, subject to a deductible and a "
                             "cap equal to ten percent of the Purchase Price."]),
        ("Non-Competition", ["For {N} months after the Closing, Seller shall not engage in any "
                             "business that competes with the Business in the territory."]),
    ]
    title = "Asset Purchase Agreement" if asset else w.pick("Stock Purchase Agreement",
                                                            "Securities Purchase Agreement")
    return _agreement(w, title, f"This {title} (this \"Agreement\") is made as of {{D}} by and "
                      "between {A} (\"Seller\") and {B} (\"Buyer\").",
                      ["Seller owns the Business and desires to sell it to Buyer;"], specific)


def credit_agreement(w: _Writer) -> str:
    specific = [
        ("The Loans", ["Each Lender severally agrees to make revolving loans to the Borrower from "
                       "time to time during the Availability Period in an aggregate principal "
                       "amount not exceeding its Commitment."]),
        ("Interest", ["Each Loan shall bear interest at the Adjusted Term SOFR Rate plus the "
                      "Applicable Margin, payable quarterly in arrears."]),
        ("Conditions Precedent", ["The obligation of each Lender to make its initial Loan is "
                                  "subject to receipt by the Administrative Agent of the Notes, "
                                  "the Security Documents and legal opinions of counsel."]),
        ("Affirmative Covenants", ["The Borrower shall deliver annual audited financial "
                                   "statements and quarterly compliance certificates and shall "
                                   "maintain a Consolidated Leverage Ratio not exceeding 3.50 to "
                                   "1.00."]),
        ("Events of Default", ["Each of the following is an Event of Default: failure to pay "
                               "principal when due; breach of any financial covenant; a Change "
                               "of Control; or the insolvency of any Loan Party."]),
        ("Treatment of Certain Information", [
            "Each Lender agrees to maintain the confidentiality of the Information, except that "
            "Information may be disclosed to its Affiliates and Related Parties, to regulators, "
            "as required by law, or to any assignee that agrees to be bound by this Section."]),
    ]
    title = w.pick("Credit Agreement", "Loan Agreement", "Revolving Credit and Term Loan "
                   "Agreement")
    return _agreement(w, title, f"This {title}, dated as of {{D}}, among {{A}}, as Borrower, the "
                      "Lenders party hereto, and {B}, as Administrative Agent.", [], specific,
                      confidentiality=False)


def employment_agreement(w: _Writer) -> str:
    specific = [
        ("Position and Duties", ["The Company shall employ the Executive as its {T}. The "
                                 "Executive shall devote substantially all of the Executive's "
                                 "business time to the Company."]),
        ("Compensation", ["The Company shall pay the Executive a base salary at the annual rate "
                          "of {$}, payable in accordance with the Company's payroll practices, "
                          "and the Executive shall be eligible for an annual bonus."]),
        ("Benefits", ["The Executive shall be entitled to participate in all employee benefit "
                      "plans, including health insurance, a 401(k) plan and paid vacation of "
                      "four weeks per year."]),
        ("Equity Awards", ["The Executive shall receive an option to purchase shares of common "
                           "stock vesting over four years, subject to the Company's Equity "
                           "Incentive Plan."]),
        ("Termination", ["The Executive's employment may be terminated by either party at any "
                         "time. Upon a termination without Cause or for Good Reason, the "
                         "Executive shall receive severance equal to {N} months of base salary."]),
    ]
    return _agreement(w, w.pick("Employment Agreement", "Executive Employment Agreement"),
                      "This EMPLOYMENT AGREEMENT is entered into as of {D} between {A} (the "
                      "\"Company\") and {P} (the \"Executive\").", [], specific)


def services_agreement(w: _Writer) -> str:
    specific = [
        ("Services", ["Provider shall provide the services described in each Statement of Work "
                      "executed by the parties, in a professional and workmanlike manner."]),
        ("Fees and Payment", ["Customer shall pay the fees set forth in each Statement of Work "
                              "within thirty days of the date of invoice. Late amounts bear "
                              "interest at one percent per month."]),
        ("Intellectual Property", ["All deliverables shall be owned by Customer upon payment in "
                                   "full; Provider retains its pre-existing materials and tools."]),
        ("Warranties", ["Provider warrants that the services will conform to the specifications "
                        "for ninety days after delivery."]),
        ("Limitation of Liability", ["Except for breaches of confidentiality, neither party "
                                     "shall be liable for indirect or consequential damages, and "
                                     "each party's liability is capped at the fees paid in the "
                                     "prior twelve months."]),
        ("Term and Termination", ["This Agreement continues for {N} months and renews "
                                  "automatically unless either party gives notice."]),
    ]
    title = w.pick("Master Services Agreement", "Consulting Agreement", "Professional Services "
                   "Agreement", "Independent Contractor Agreement")
    return _agreement(w, title, f"This {title} is entered into as of {{D}} by and between {{A}} "
                      "(\"Customer\") and {B} (\"Provider\").", [], specific)


def saas_agreement(w: _Writer) -> str:
    specific = [
        ("Subscription", ["Subject to this Agreement, Vendor grants Customer a non-exclusive, "
                          "non-transferable right to access and use the Service during the "
                          "Subscription Term for its internal business purposes."]),
        ("Customer Data", ["Customer retains all rights in Customer Data. Vendor shall process "
                           "Customer Data only to provide the Service and shall maintain "
                           "administrative, physical and technical safeguards."]),
        ("Service Levels", ["Vendor shall make the Service available 99.9% of the time in each "
                            "calendar month, excluding scheduled maintenance, and shall provide "
                            "service credits for any shortfall."]),
        ("Fees", ["Customer shall pay the subscription fees set forth in the Order Form annually "
                  "in advance."]),
        ("Acceptable Use", ["Customer shall not reverse engineer the Service, use it to store "
                            "infringing material or attempt to gain unauthorized access."]),
    ]
    title = w.pick("Software as a Service Agreement", "Subscription Agreement", "Cloud Services "
                   "Agreement", "Software License Agreement")
    return _agreement(w, title, f"This {title} is made as of {{D}} between {{A}} (\"Vendor\") "
                      "and {B} (\"Customer\").", [], specific)


def lease(w: _Writer) -> str:
    specific = [
        ("Premises", ["Landlord leases to Tenant approximately 12,500 rentable square feet on "
                      "the fourth floor of the Building, together with the right to use the "
                      "common areas."]),
        ("Term", ["The Term shall commence on the Commencement Date and expire on the last day "
                  "of the {N}th full calendar month thereafter."]),
        ("Rent", ["Tenant shall pay Base Rent in monthly installments in advance on the first day "
                  "of each month, together with Tenant's share of Operating Expenses and Taxes."]),
        ("Security Deposit", ["Tenant shall deposit with Landlord a security deposit of {$}."]),
        ("Use", ["Tenant shall use the Premises only for general office purposes and in "
                 "compliance with all applicable laws."]),
        ("Maintenance and Repairs", ["Landlord shall maintain the structural elements and "
                                     "building systems; Tenant shall keep the interior of the "
                                     "Premises in good condition."]),
    ]
    return _agreement(w, w.pick("Office Lease", "Lease Agreement", "Commercial Lease"),
                      "This LEASE is made as of {D} between {A} (\"Landlord\") and {B} "
                      "(\"Tenant\").", [], specific)


def supply_agreement(w: _Writer) -> str:
    specific = [
        ("Supply of Products", ["Supplier shall manufacture and sell to Buyer, and Buyer shall "
                                "purchase from Supplier, the Products in the quantities set forth "
                                "in purchase orders issued under this Agreement."]),
        ("Forecasts and Orders", ["Buyer shall provide a rolling twelve-month forecast; the "
                                  "first three months are binding."]),
        ("Pricing", ["Prices are as set forth in Schedule A and may be adjusted annually for "
                     "changes in raw material costs."]),
        ("Quality", ["Supplier shall manufacture the Products in accordance with the "
                     "Specifications and current Good Manufacturing Practices."]),
        ("Delivery", ["Delivery shall be FCA Supplier's facility; title and risk of loss pass "
                      "to Buyer upon delivery to the carrier."]),
    ]
    title = w.pick("Supply Agreement", "Manufacturing and Supply Agreement", "Distribution "
                   "Agreement", "Reseller Agreement")
    return _agreement(w, title, f"This {title} is entered into as of {{D}} by and between {{A}} "
                      "(\"Supplier\") and {B} (\"Buyer\").", [], specific)


def license_agreement(w: _Writer) -> str:
    specific = [
        ("Grant of License", ["Licensor grants Licensee an exclusive, royalty-bearing license "
                              "under the Licensed Patents to make, use and sell Licensed "
                              "Products in the Field in the Territory."]),
        ("Royalties", ["Licensee shall pay Licensor a royalty of four percent of Net Sales of "
                       "Licensed Products, payable within forty-five days after each calendar "
                       "quarter."]),
        ("Diligence", ["Licensee shall use commercially reasonable efforts to develop and "
                       "commercialize Licensed Products."]),
        ("Patent Prosecution", ["Licensor shall control the prosecution and maintenance of the "
                                "Licensed Patents at Licensee's expense."]),
        ("Records and Audit", ["Licensee shall keep complete books of account and permit an "
                               "independent accountant to audit them once a year."]),
    ]
    title = w.pick("License Agreement", "Exclusive Patent License Agreement", "Collaboration and "
                   "License Agreement", "Joint Venture Agreement")
    return _agreement(w, title, f"This {title} is made effective as of {{D}} by and between "
                      "{A} (\"Licensor\") and {B} (\"Licensee\").", [], specific)


def operating_agreement(w: _Writer) -> str:
    specific = [
        ("Formation", ["The Members formed the Company as a limited liability company under the "
                       "Limited Liability Company Act of the State of {S}."]),
        ("Capital Contributions", ["Each Member shall contribute the amount set forth opposite "
                                   "its name on Schedule A; no Member shall be required to make "
                                   "additional contributions."]),
        ("Allocations and Distributions", ["Profits and losses shall be allocated among the "
                                           "Members in proportion to their Percentage "
                                           "Interests; distributions shall be made at the "
                                           "discretion of the Board of Managers."]),
        ("Management", ["The business of the Company shall be managed by a Board of Managers "
                        "of three persons."]),
        ("Transfers", ["No Member may transfer its Units without the consent of the Board, "
                       "subject to the rights of first refusal and tag-along rights herein."]),
    ]
    return _agreement(w, w.pick("Limited Liability Company Agreement", "Operating Agreement",
                                "Stockholders Agreement"),
                      "This AGREEMENT is entered into as of {D} by and among the Members listed "
                      "on Schedule A, including {A} and {B}.", [], specific)


def settlement_agreement(w: _Writer) -> str:
    specific = [
        ("Settlement Payment", ["Within fifteen business days after the Effective Date, {A} "
                                "shall pay {B} the sum of {$} in full settlement of the Action."]),
        ("Release", ["Each party releases the other from all claims arising out of the facts "
                     "alleged in the Action, whether known or unknown."]),
        ("Dismissal", ["Within five days after receipt of the Settlement Payment, the parties "
                       "shall file a stipulation of dismissal with prejudice."]),
        ("No Admission", ["This Agreement is a compromise of disputed claims and is not an "
                          "admission of liability by any party."]),
    ]
    return _agreement(w, w.pick("Settlement Agreement", "Settlement Agreement and Release"),
                      "This SETTLEMENT AGREEMENT is entered into as of {D} by {A} and {B} to "
                      "resolve the action pending in the United States District Court (the "
                      "\"Action\").", [], specific)


def indemnification_agreement(w: _Writer) -> str:
    specific = [
        ("Indemnification", ["The Company shall indemnify Indemnitee to the fullest extent "
                             "permitted by law against all Expenses incurred in connection with "
                             "any Proceeding by reason of Indemnitee's corporate status."]),
        ("Advancement of Expenses", ["The Company shall advance all Expenses within twenty days "
                                     "after receipt of a statement requesting an advance."]),
        ("Insurance", ["The Company shall maintain directors' and officers' liability insurance "
                       "covering Indemnitee."]),
    ]
    return _agreement(w, w.pick("Indemnification Agreement", "Registration Rights Agreement"),
                      "This AGREEMENT is made as of {D} by and between {A} (the \"Company\") "
                      "and {P} (\"Indemnitee\").", [], specific)


def _letter(w: _Writer, body: list[str], close: str = "Very truly yours,",
            accept: bool = True, heading: str | None = None) -> str:
    r = w.rng
    parts = [_edgar(w, "99")]
    if heading:
        parts.append(heading)
    parts.append(f"{w.parties[0]}\n{r.randint(10, 999)} {r.choice(_FIRST)} Street\n"
                 f"{r.choice(['Suite 400', 'Floor 12', ''])}")
    parts.append(w.date)
    parts.append(f"{w.person}\n{w.parties[1]}")
    parts.append(f"Dear {w.pick('Mr.', 'Ms.', 'Dr.')} {w.person.split()[-1]}:")
    parts += [w.fill(p) for p in body]
    parts.append(f"{close}\n\n{w.parties[0].upper()}\n\nBy: __________________\nName: "
                 f"{r.choice(_PEOPLE)}\nTitle: {r.choice(_TITLES)}")
    if accept:
        parts.append(f"Accepted and agreed as of the date first written above:\n\n"
                     f"{w.parties[1].upper()}\n\nBy: __________________\nName: {w.person}")
    return "\n\n".join(p for p in parts if p)


def offer_letter(w: _Writer) -> str:
    return _letter(w, [
        "We are pleased to offer you the position of {T} with {A}, reporting to the Chief "
        "Executive Officer, with a start date of {D2}.",
        "Your annual base salary will be {$}, paid in accordance with the Company's payroll "
        "schedule. You will be eligible for the Company's standard benefits, including medical, "
        "dental and vision insurance and paid time off.",
        w.pick("As a condition of your employment, you will be required to sign the Company's "
               "standard Confidential Information and Invention Assignment Agreement.",
               "Like all employees, you will be asked to sign our employee confidentiality "
               "and proprietary rights agreement on your first day."),
        "Your employment with the Company is at will, meaning that either you or the Company "
        "may terminate it at any time, with or without cause.",
        "Please sign and return this letter by {D2} to accept this offer. We look forward to "
        "working with you."], close=w.pick("Sincerely,", "Best regards,"))


def engagement_letter(w: _Writer) -> str:
    return _letter(w, [
        "This letter confirms the terms on which {A} (\"we\") will provide "
        + w.pick("legal services", "financial advisory services", "audit services",
                 "investment banking services") + " to {B} (the \"Client\") in connection with "
        "the matter described below.",
        "Our fees will be based on the time spent at our standard hourly rates, and we will "
        "bill monthly. In addition, the Client will reimburse our reasonable out-of-pocket "
        "expenses.",
        "We will treat as confidential all non-public information that the Client provides to "
        "us in the course of this engagement, except as required by law or professional "
        "standards.",
        "Either party may terminate this engagement at any time by written notice. If these "
        "terms are acceptable, please sign and return a copy of this letter."])


def letter_of_intent(w: _Writer) -> str:
    return _letter(w, [
        "This letter sets forth the principal terms of the proposed acquisition by {A} of all "
        "of the outstanding equity of {B} (the \"Transaction\").",
        "Purchase Price. The purchase price will be {$}, payable in cash at closing, subject to "
        "customary adjustments for working capital and indebtedness.",
        "Due Diligence. Upon execution of this letter, the Company will give the Buyer access "
        "to its books, records and personnel. Such access is subject to the Confidentiality "
        "Agreement dated {D2} between the parties.",
        "Exclusivity. For {N} days the Company will not solicit or negotiate any other proposal "
        "for the acquisition of the Company.",
        "Non-Binding Effect. Except for the paragraphs entitled Exclusivity, Expenses and "
        "Governing Law, this letter is a non-binding expression of intent, and no binding "
        "obligation will arise until a definitive purchase agreement is signed."],
        heading=w.pick("LETTER OF INTENT", "Re: Non-Binding Indication of Interest", ""))


def board_minutes(w: _Writer) -> str:
    r = w.rng
    return w.fill("\n\n".join([
        _edgar(w, "99"),
        "MINUTES OF A MEETING OF THE BOARD OF DIRECTORS OF " + w.parties[0].upper(),
        "A meeting of the Board of Directors of {A} was held on {D} by videoconference. All "
        "directors were present, and {P} acted as secretary of the meeting.",
        "Strategic Review. Management reported that the Company had entered into "
        + r.choice(["confidentiality agreements with four potential bidders",
                    "a confidentiality agreement with {B}",
                    "non-disclosure agreements with two strategic parties"])
        + " and that the data room had been opened. The financial advisor summarized the "
        "indications of interest received.",
        "Financial Results. The Chief Financial Officer presented the results for the quarter, "
        "including revenue of {$} and operating cash flow ahead of plan.",
        "Resolutions. RESOLVED, that the officers of the Company are authorized to negotiate "
        "a definitive agreement with {B}, subject to further approval of the Board.",
        "There being no further business, the meeting was adjourned."]))


def press_release(w: _Writer) -> str:
    return w.fill("\n\n".join([
        _edgar(w, "99.1"),
        "FOR IMMEDIATE RELEASE",
        "{A} to Acquire {B} for {$}",
        "{S}, {D} -- {A} today announced that it has entered into a definitive agreement to "
        "acquire {B}. The transaction has been approved by both boards of directors and is "
        "expected to close in the second half of the year, subject to regulatory approvals.",
        "\"This combination accelerates our strategy,\" said {P}, {T} of {A}.",
        "The company also disclosed that, before signing, it had entered into confidentiality "
        "agreements with several other parties during a sale process run by its financial "
        "advisor.",
        "Forward-Looking Statements. This press release contains forward-looking statements "
        "that involve risks and uncertainties. Actual results may differ materially.",
        "Contact: Investor Relations, ir@example.com"]))


def privacy_policy(w: _Writer) -> str:
    return w.fill("\n\n".join([
        w.pick("Privacy Policy", "Terms of Service", "Data Processing Addendum"),
        "This policy describes how {A} collects, uses and discloses personal information when "
        "you use our website and services.",
        "Information We Collect. We collect information you provide to us, such as your name, "
        "e-mail address and payment details, and information collected automatically, such as "
        "log data and cookies.",
        "How We Use Information. We use personal information to provide and improve our "
        "services, to communicate with you and to comply with legal obligations.",
        "Disclosure. We do not sell personal information. We disclose it to service providers "
        "who are bound by confidentiality obligations and process it only on our instructions.",
        "Security. We maintain safeguards designed to protect the confidentiality and integrity "
        "of personal information.",
        "Contact Us. Questions about this policy may be sent to privacy@example.com."]))


# --- hard positives: NDAs in the forms the benchmark has few of -----------------------------

_NDA_CORE = [
    ("Definition of Confidential Information", [
        "\"Confidential Information\" means all non-public information, in any form, that the "
        "Disclosing Party furnishes to the Receiving Party, including business plans, financial "
        "information, customer lists, technical data, trade secrets and know-how, whether or "
        "not marked as confidential.",
        "As used herein, \"Confidential Information\" means any information disclosed by "
        "either party to the other, directly or indirectly, in writing, orally or by inspection "
        "of tangible objects, which is designated as confidential or which a reasonable person "
        "would understand to be confidential."]),
    ("Exclusions", [
        "Confidential Information shall not include information that (a) is or becomes "
        "generally available to the public other than as a result of a disclosure by the "
        "Receiving Party, (b) was known to the Receiving Party before its disclosure, (c) is "
        "independently developed without use of the Confidential Information, or (d) is "
        "received from a third party not bound by a duty of confidentiality."]),
    ("Obligations of the Receiving Party", [
        "The Receiving Party shall hold the Confidential Information in strict confidence, "
        "shall not disclose it to any person other than its Representatives who need to know "
        "it for the Purpose, and shall use it solely for the Purpose of evaluating a potential "
        "business relationship between the parties.",
        "The Recipient agrees not to use any Confidential Information for any purpose except "
        "to evaluate and engage in discussions concerning the Proposed Transaction, and not to "
        "disclose any Confidential Information to third parties."]),
    ("Compelled Disclosure", [
        "If the Receiving Party is required by law or legal process to disclose any "
        "Confidential Information, it shall give the Disclosing Party prompt notice so that "
        "the Disclosing Party may seek a protective order, and shall disclose only that portion "
        "which it is legally required to disclose."]),
    ("Return of Materials", [
        "Upon the Disclosing Party's request, the Receiving Party shall promptly return or "
        "destroy all documents and other materials containing Confidential Information and "
        "certify such destruction in writing."]),
    ("No License; No Warranty", [
        "Nothing in this Agreement grants the Receiving Party any license under any patent, "
        "copyright or other intellectual property right. All Confidential Information is "
        "provided \"as is\", without warranty of any kind."]),
    ("Term", [
        "The obligations of this Agreement shall survive for {N} months from the date of the "
        "last disclosure of Confidential Information hereunder.",
        "This Agreement shall remain in effect for a period of {N} months from the Effective "
        "Date."]),
    ("Remedies", [
        "The Receiving Party acknowledges that unauthorized disclosure of Confidential "
        "Information may cause irreparable harm for which monetary damages would be "
        "inadequate, and that the Disclosing Party shall be entitled to seek injunctive relief "
        "without posting a bond."]),
]


def titled_nda(w: _Writer) -> str:
    title = w.pick("Mutual Non-Disclosure Agreement", "Nondisclosure Agreement",
                   "Confidentiality Agreement", "Mutual Confidentiality Agreement",
                   "Non-Disclosure and Confidentiality Agreement", "Confidential Disclosure "
                   "Agreement", "Non-Circumvention and Non-Disclosure Agreement")
    return _agreement(w, title, f"This {title} (this \"Agreement\") is entered into as of {{D}} "
                      "(the \"Effective Date\") by and between {A} and {B} (each, a \"Party\").",
                      ["the parties wish to explore a possible business relationship (the "
                       "\"Purpose\") and in connection therewith may disclose to each other "
                       "certain confidential information;"],
                      _NDA_CORE, confidentiality=False, exhibit=w.pick("10", "99"))


def untitled_nda(w: _Writer) -> str:
    return _agreement(w, None, "The undersigned, {A} (\"Company\") and {B} (\"Recipient\"), "
                      "agree as follows with respect to information the Company may disclose "
                      "to the Recipient on or after {D}:", [], _NDA_CORE, confidentiality=False)


def letter_nda(w: _Writer) -> str:
    """The M&A confidentiality letter: no title, the evaluation of a possible transaction."""
    material = w.pick("Evaluation Material", "Confidential Information", "Information")
    paragraphs = [
        w.pick("In connection with your consideration of a possible negotiated transaction (a "
               "\"Transaction\") with {A} (the \"Company\"), the Company is prepared to make "
               "available to you certain information concerning its business, financial "
               "condition and operations. As a condition to such information being furnished to "
               "you, you agree to treat it in accordance with the provisions of this letter.",
               "You have advised us that you are interested in exploring a possible business "
               "combination with {A} (the \"Company\"). In order to allow you to evaluate the "
               "possible transaction, the Company will deliver to you, upon your request, "
               "certain information about its properties, employees, finances and operations.",
               "{B} (\"you\") has requested information regarding {A} (the \"Company\") in "
               "connection with a potential acquisition of the Company. In consideration of "
               "the Company furnishing that information, you agree as set forth below."),
        f"The term \"{material}\" means all information furnished to you or your "
        "Representatives by or on behalf of the Company, whether oral or written, together "
        "with all notes, analyses and compilations prepared by you that contain or reflect "
        f"such information. {material} does not include information that is or becomes "
        "generally available to the public other than as a result of a disclosure by you, or "
        "that you receive from a source not known by you to be bound by a confidentiality "
        "obligation.",
        w.pick(f"You agree that the {material} will be used solely for the purpose of "
               "evaluating a Transaction, that it will be kept confidential, and that you will "
               "not disclose it except to your Representatives who need to know it for that "
               "purpose.", f"You shall hold the {material} in strict confidence, use it only "
               "to evaluate the possible transaction and disclose it only to those of your "
               "directors, officers, employees and advisors who need to know it and who are "
               "informed of its confidential nature."),
        w.pick("Without the Company's prior written consent, you will not disclose to any "
               "person the fact that the information has been made available or that "
               "discussions are taking place.",
               "For a period of {N} months, you will not, without the prior written consent of "
               "the Company, acquire any securities of the Company or solicit proxies from its "
               "stockholders.",
               "For {N} months from the date of this letter, you will not solicit for "
               "employment any officer of the Company with whom you had contact during your "
               "evaluation."),
        w.pick("If you are required by law or legal process to disclose any of the "
               f"{material}, you will notify the Company promptly so that it may seek a "
               "protective order.", f"At the Company's request, you will promptly return or "
               f"destroy all {material} and certify its destruction in writing."),
        "You understand that neither the Company nor its Representatives make any "
        f"representation as to the accuracy or completeness of the {material}, and that no "
        "agreement providing for a Transaction shall exist unless a definitive agreement has "
        "been executed.",
        "This letter shall be governed by the laws of the State of {S} and shall expire {N} "
        "months from the date hereof."]
    return _letter(w, paragraphs, close=w.pick("Very truly yours,", "Sincerely,"),
                   heading=w.pick("", "", "PRIVATE AND CONFIDENTIAL", "Confidential"))


def employee_confidentiality(w: _Writer) -> str:
    title = w.pick("Employee Confidentiality and Invention Assignment Agreement",
                   "Proprietary Information and Inventions Agreement", "Non-Competition and "
                   "Non-Disclosure Agreement", "Confidentiality and Non-Solicitation Agreement")
    specific = [
        ("Confidential Information", [
            "I agree at all times during my employment and thereafter to hold in strictest "
            "confidence, and not to use except for the benefit of the Company or to disclose to "
            "any person without written authorization, any Confidential Information of the "
            "Company.", "The Employee shall not, during or after the Employee's employment, "
            "disclose any Confidential Information or trade secrets of the Company to any person "
            "or use them for any purpose other than the Company's business."]),
        ("Inventions", ["I agree to promptly disclose to the Company and hereby assign to the "
                        "Company all inventions that I conceive during my employment that "
                        "relate to the Company's business."]),
        ("Return of Company Property", ["Upon termination of employment the Employee shall "
                                        "deliver to the Company all documents containing "
                                        "Confidential Information."]),
        ("Non-Solicitation", ["For {N} months after termination, the Employee shall not solicit "
                              "any employee or customer of the Company."]),
    ]
    return _agreement(w, title, f"This {title} is entered into as of {{D}} between {{A}} (the "
                      "\"Company\") and {P} (the \"Employee\"), in consideration of the "
                      "Employee's employment and access to Confidential Information.", [],
                      specific, confidentiality=False)


_SHORT_NDA = ["Each party may disclose Confidential Information to the other.",
              "The Recipient shall not disclose the Confidential Information to any third party.",
              "The receiving party shall use the disclosed information only to evaluate the "
              "proposed relationship.", "Confidential Information shall be returned on request.",
              "This Agreement shall remain in effect for {N} months.",
              "This Agreement is governed by the laws of the State of {S}.",
              "The parties are {A} and {B}.", "Signed: {A}."]
_SHORT_OTHER = ["The Tenant shall pay rent monthly.", "Total due: {$}.",
                "The Buyer shall pay the purchase price at closing.",
                "The Employee shall receive a base salary of {$} per year.",
                "Each party shall keep the terms of this agreement confidential.",
                "This Agreement is governed by the laws of the State of {S}.",
                "The parties are {A} and {B}.", "Signed: {A}.",
                "The Supplier shall deliver the Products within thirty days of each order."]


def short_nda(w: _Writer) -> str:
    """A page or two: the title and a few plain sentences (how people test, and cover pages)."""
    title = w.pick("MUTUAL NON-DISCLOSURE AGREEMENT", "NON-DISCLOSURE AGREEMENT",
                   "CONFIDENTIALITY AGREEMENT", "Nondisclosure Agreement")
    lines = w.rng.sample(_SHORT_NDA, w.rng.randint(2, 5))
    return w.fill(f"{title} made as of {{D}} between {{A}} and {{B}}.\n" + "\n".join(lines))


def short_contract(w: _Writer) -> str:
    title = w.pick("LEASE AGREEMENT", "INVOICE", "PURCHASE ORDER", "EMPLOYMENT AGREEMENT",
                   "SERVICES AGREEMENT", "SUPPLY AGREEMENT", "MEMORANDUM")
    lines = w.rng.sample(_SHORT_OTHER, w.rng.randint(2, 5))
    return w.fill(f"{title} dated {{D}} between {{A}} and {{B}}.\n" + "\n".join(lines))


FAMILIES: dict[str, tuple[bool, object]] = {
    "merger_agreement": (False, merger_agreement),
    "purchase_agreement": (False, purchase_agreement),
    "credit_agreement": (False, credit_agreement),
    "employment_agreement": (False, employment_agreement),
    "services_agreement": (False, services_agreement),
    "saas_agreement": (False, saas_agreement),
    "lease": (False, lease),
    "supply_agreement": (False, supply_agreement),
    "license_agreement": (False, license_agreement),
    "operating_agreement": (False, operating_agreement),
    "settlement_agreement": (False, settlement_agreement),
    "indemnification_agreement": (False, indemnification_agreement),
    "offer_letter": (False, offer_letter),
    "engagement_letter": (False, engagement_letter),
    "letter_of_intent": (False, letter_of_intent),
    "board_minutes": (False, board_minutes),
    "press_release": (False, press_release),
    "privacy_policy": (False, privacy_policy),
    "titled_nda": (True, titled_nda),
    "untitled_nda": (True, untitled_nda),
    "letter_nda": (True, letter_nda),
    "employee_confidentiality": (True, employee_confidentiality),
    "short_nda": (True, short_nda),
    "short_contract": (False, short_contract),
}
"""family -> (is an NDA, writer)."""


def written_documents(per_family: int = 12, seed: int = 0) -> list[WrittenDocument]:
    """``per_family`` documents of every family, deterministic for ``seed``."""
    out = []
    for family, (is_nda, write) in FAMILIES.items():
        for i in range(per_family):
            rng = random.Random(f"{seed}:{family}:{i}")
            out.append(WrittenDocument(f"written/{family}/{i:03d}", family, is_nda,
                                       write(_Writer(rng))))  # type: ignore[operator]
    return out
